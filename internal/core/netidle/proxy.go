package netidle

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/net/proxy"
)

// ProxyScheme is the golang.org/x/net/proxy scheme of the URLs ProxyURL
// returns.
const ProxyScheme = "wharf-netidle"

var (
	proxies  sync.Map // ProxyURL string -> *watch
	proxySeq atomic.Uint64
)

func init() {
	proxy.RegisterDialerType(ProxyScheme, func(u *url.URL, _ proxy.Dialer) (proxy.Dialer, error) {
		v, ok := proxies.Load(u.String())
		if !ok {
			return nil, fmt.Errorf("the network step %s is over", u.Host)
		}
		return watchDialer{v.(*watch)}, nil
	})
}

// ProxyURL returns a URL for clients that dial through
// golang.org/x/net/proxy.FromURL, such as go-git's ssh transport (its
// ProxyOptions.URL): the dialer it names dials with DialContext under
// ctx's Watch (through ALL_PROXY when that is set, as proxy.Dial would),
// so the idle limit covers those connections too. It returns "" when ctx
// carries no Watch; the URL stops working when the step is over.
func ProxyURL(ctx context.Context) string {
	w, ok := ctx.Value(watchKey{}).(*watch)
	if !ok {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.proxy == "" && !w.done {
		w.proxy = ProxyScheme + "://" + strconv.FormatUint(proxySeq.Add(1), 10)
		proxies.Store(w.proxy, w)
	}
	return w.proxy
}

// watchDialer dials under a watch's context, whatever context the client
// passes (go-git's ssh transport passes a background one).
type watchDialer struct{ w *watch }

func (d watchDialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

func (d watchDialer) DialContext(_ context.Context, network, addr string) (net.Conn, error) {
	var env proxy.Dialer = proxy.FromEnvironmentUsing(direct{d.w.ctx})
	if cd, ok := env.(proxy.ContextDialer); ok {
		return cd.DialContext(d.w.ctx, network, addr)
	}
	return env.Dial(network, addr)
}

// direct dials with DialContext under the watch's context.
type direct struct{ ctx context.Context }

func (d direct) Dial(network, addr string) (net.Conn, error) {
	return DialContext(d.ctx, network, addr)
}

func (d direct) DialContext(_ context.Context, network, addr string) (net.Conn, error) {
	return DialContext(d.ctx, network, addr)
}
