package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	wharf "github.com/wharfhq/wharf"
	"github.com/wharfhq/wharf/internal/server/catalog"
	"github.com/wharfhq/wharf/internal/server/serverhome"
	"github.com/wharfhq/wharf/plugin"
)

// serveOptions are the flags of wharf-server.
type serveOptions struct {
	Addr        string
	Data        string
	Demo        string
	RateLimit   float64
	RateBurst   int
	BodyLimit   int64
	Timeout     time.Duration
	Grace       time.Duration
	LogLevel    string
	TrustedKeys []string
	// TrustedProxies are reverse proxies whose X-Forwarded-For is believed.
	TrustedProxies []string
	Store          storeFlags // store_flags.go
	OIDC           oidcFlags  // oidc_flags.go
	// TLSCert and TLSKey are PEM files: the server serves HTTPS itself.
	TLSCert string
	TLSKey  string
}

// addServeFlags declares the server's flags on f.
func addServeFlags(f *pflag.FlagSet, o *serveOptions) {
	f.StringVar(&o.Addr, "addr", "127.0.0.1:7070", "listen address")
	f.StringVar(&o.Data, "data", "", "server data directory (default $WHARF_HOME/server)")
	f.StringVar(&o.Demo, "demo", defaultDemo, "directory marketplace registered on first start (default: the source tree's, else the copy built into wharf-server); empty to skip")
	f.Float64Var(&o.RateLimit, "rate-limit", 50, "requests per second per token; negative for no limit")
	f.IntVar(&o.RateBurst, "rate-burst", 0, "burst per token (default twice --rate-limit)")
	f.Int64Var(&o.BodyLimit, "body-limit", 1<<20, "largest request body in bytes")
	f.DurationVar(&o.Timeout, "request-timeout", 30*time.Second, "longest a request may take")
	f.DurationVar(&o.Grace, "shutdown-grace", 10*time.Second, "how long in-flight requests may finish at shutdown")
	f.StringVar(&o.LogLevel, "log-level", "info", "debug, info, warn or error")
	addStoreFlags(f, &o.Store)
	addOIDCFlags(f, &o.OIDC)
	f.StringArrayVar(&o.TrustedProxies, "trusted-proxy", nil, "CIDR range (or address) of a reverse proxy whose X-Forwarded-For gives the client's address; repeatable (default: none, the connection's address is the client's)")
	f.StringVar(&o.TLSCert, "tls-cert", "", "certificate chain (PEM) to serve HTTPS with; needs --tls-key")
	f.StringVar(&o.TLSKey, "tls-key", "", "private key (PEM) of --tls-cert")
	f.StringArrayVar(&o.TrustedKeys, "trusted-key", nil, "public key file (PEM) trusted for plugin signatures, in addition to $WHARF_HOME/keys/*.pub; repeatable")
}

// serveInfo is printed once the server listens (stdout, JSON under --json).
type serveInfo struct {
	URL         string `json:"url"`
	Data        string `json:"data"`
	Store       string `json:"store"`
	BundleKeyID string `json:"bundleKeyId"`
	AdminToken  string `json:"adminToken,omitempty"` // only on the first start
	Demo        string `json:"demo,omitempty"`
}

func (a *app) runServe(ctx context.Context, o *serveOptions) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.LogLevel)); err != nil {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--log-level",
			Err: fmt.Errorf("unknown log level %q", o.LogLevel), Hint: "use debug, info, warn or error"}
	}
	logger := slog.New(slog.NewJSONHandler(a.stderr, &slog.HandlerOptions{Level: level}))
	tlsCfg, err := serverTLS(o.TLSCert, o.TLSKey)
	if err != nil {
		return err
	}
	// The port first: a server that cannot listen creates nothing (on a
	// first start, no admin token that nobody would see work).
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: o.Addr, Err: err,
			Hint: "pick another --addr, or stop what listens there"}
	}
	defer ln.Close()
	bootstrap := os.Getenv("WHARF_BOOTSTRAP_TOKEN")
	sso, err := o.OIDC.config(os.Getenv)
	if err != nil {
		return err
	}
	s, err := serverhome.Open(serverhome.Config{
		Home: a.cfg.Home, Data: o.Data, Store: serverhome.StoreConfig(o.Store),
		LockTimeout: a.cfg.LockTimeout, GitTimeout: a.cfg.GitTimeout, NetIdle: a.cfg.NetIdle, GitHubHost: a.cfg.GitHubHost,
		TrustedKeys: o.TrustedKeys, BootstrapToken: bootstrap, Logger: logger,
		BodyLimit: o.BodyLimit, RequestTimeout: o.Timeout, RateLimit: o.RateLimit, RateBurst: o.RateBurst,
		TrustedProxies: o.TrustedProxies, Identity: sso,
	})
	if err != nil {
		return err
	}
	defer s.Close()
	data, where := s.Data, s.Where
	info := serveInfo{Data: data, Store: where, BundleKeyID: s.API.BundleKeyID()}
	if s.FirstStart {
		if s.AdminToken != "" {
			info.AdminToken = s.AdminToken
			fmt.Fprintf(a.stderr, "wharf-server: first start: created an admin token; it is shown only now (a lost one: wharf-server admin token create):\n\n    %s\n\n", s.AdminToken)
		}
		if o.Demo != "" {
			name, err := registerDemo(ctx, s.Catalog, demoDir(o.Demo, data))
			if err != nil {
				fmt.Fprintf(a.stderr, "wharf-server: warning: demo marketplace not registered: %v\n", err)
			} else {
				info.Demo = name
			}
		}
	}

	scheme := "http://"
	if tlsCfg != nil {
		scheme = "https://"
		ln = tls.NewListener(ln, tlsCfg)
	} else if !loopback(ln.Addr()) {
		fmt.Fprintf(a.stderr, "wharf-server: warning: serving plain HTTP on %s (--addr %s), which is not a loopback address: tokens and policy cross the network unencrypted; serve HTTPS with --tls-cert and --tls-key, or put a TLS proxy in front and listen on 127.0.0.1\n", ln.Addr(), o.Addr)
	}
	info.URL = scheme + ln.Addr().String()
	// Signals are caught before the server says it is up, so a supervisor
	// that stops it as soon as it reads that line gets a graceful stop.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if a.cfg.JSON {
		if err := a.printJSON(info); err != nil {
			return err
		}
	} else {
		a.printf("wharf-server: serving on %s (data %s, store %s)\n", info.URL, data, where)
	}
	logger.Info("serving", "url", info.URL, "data", data, "store", where)
	return s.API.Serve(ctx, ln, o.Grace)
}

// serverTLS is the TLS configuration of --tls-cert and --tls-key; nil
// when neither is given.
func serverTLS(cert, key string) (*tls.Config, error) {
	if cert == "" && key == "" {
		return nil, nil
	}
	if cert == "" || key == "" {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--tls-cert",
			Err: errors.New("--tls-cert and --tls-key go together"), Hint: "pass the certificate chain and its private key (PEM files), or neither"}
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: cert + ", " + key, Err: err,
			Hint: "pass PEM files: the certificate chain (--tls-cert) and the matching private key (--tls-key)"}
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// loopback reports whether addr only accepts connections from this
// machine (127.0.0.0/8, ::1).
func loopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// demoDir is the demo marketplace to register: dir when it exists; else, for
// the default, the copy built into the binary, written under the data dir
// (so that wharf-server shows a catalog wherever it runs).
func demoDir(dir, data string) string {
	if _, err := os.Stat(dir); err == nil || dir != defaultDemo {
		return dir
	}
	embedded := filepath.Join(data, "demo-marketplace")
	if _, err := os.Stat(embedded); err == nil {
		return embedded
	}
	if err := wharf.WriteDemoMarketplace(embedded); err != nil {
		return dir
	}
	return embedded
}

// defaultDemo is --demo's default, relative to the source tree.
var defaultDemo = filepath.Join("testdata", "demo-marketplace")

// registerDemo adds the directory marketplace at dir under the name its
// marketplace.json declares.
func registerDemo(ctx context.Context, c *catalog.Marketplaces, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(abs, ".claude-plugin", "marketplace.json")); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s has no .claude-plugin/marketplace.json; run wharf-server from the wharf source tree or pass --demo DIR", abs)
		}
		return "", err
	}
	m, _, err := plugin.ReadMarketplace(abs)
	if err != nil {
		return "", err
	}
	src := fmt.Sprintf(`{"source": "directory", "path": %q}`, abs)
	if _, err := c.AddMarketplace(ctx, m.Name, []byte(src)); err != nil {
		return "", err
	}
	return strings.TrimSpace(m.Name), nil
}
