// Package netidle bounds how long a network step may go without moving a
// byte, separately from the step's overall deadline: a server that accepts a
// connection and never answers (or sends headers and stalls) fails after the
// idle limit instead of holding the command until the overall one.
//
// A step calls Watch; connections dialed under the returned context (by
// DialContext, or by an http.Client using Transport) postpone the limit with
// every byte they read or write. The clock runs only while such a connection
// is open, so local work between requests (a checkout) never counts as idle.
// When the limit passes, the context is cancelled with an *Error as its
// cause; Cause returns it, and the step's connections are closed, so a
// client blocked reading one (an ssh handshake, which go-git runs without
// a context) returns at once.
//
// Clients that dial through golang.org/x/net/proxy (go-git's ssh
// transport) reach DialContext through ProxyURL. OnRead lets a progress
// bar (package progress) count the bytes a step receives.
package netidle

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Error is the cause of a context cancelled for idleness.
type Error struct {
	// Host is the host:port the idle connection went to.
	Host string
	Idle time.Duration
}

func (e *Error) Error() string {
	return fmt.Sprintf("no data from %s for %s", e.Host, e.Idle)
}

type watchKey struct{}

type watch struct {
	ctx    context.Context
	idle   time.Duration
	cancel context.CancelCauseFunc

	mu     sync.Mutex
	open   int
	conns  map[*conn]struct{}
	done   bool   // ctx is over: connections dialed now are closed at once
	host   string // the most recently active connection's address
	timer  *time.Timer
	onRead func(n int)
	proxy  string // the ProxyURL naming this watch, once asked for
}

// Watch returns a context that is cancelled with an *Error when a
// connection dialed under it stays open without moving a byte for idle.
// idle <= 0 disables the limit (connections are still closed when the
// step ends). Call stop when the step is over.
func Watch(parent context.Context, idle time.Duration) (ctx context.Context, stop context.CancelFunc) {
	if idle < 0 {
		idle = 0
	}
	ctx, cancel := context.WithCancelCause(parent)
	w := &watch{idle: idle, cancel: cancel, conns: map[*conn]struct{}{}}
	ctx = context.WithValue(ctx, watchKey{}, w)
	w.ctx = ctx
	context.AfterFunc(ctx, w.closeAll)
	return ctx, func() {
		w.mu.Lock()
		if w.timer != nil {
			w.timer.Stop()
		}
		w.mu.Unlock()
		cancel(context.Canceled)
	}
}

// Cause returns the *Error that cancelled ctx (or a context it derives
// from), or nil.
func Cause(ctx context.Context) *Error {
	var e *Error
	if errors.As(context.Cause(ctx), &e) {
		return e
	}
	return nil
}

func (w *watch) fire() {
	w.mu.Lock()
	host := w.host
	w.mu.Unlock()
	w.cancel(&Error{Host: host, Idle: w.idle})
}

// active records activity on the connection to host: the clock restarts.
func (w *watch) active(host string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.host = host
	if w.idle == 0 {
		return
	}
	if w.timer == nil {
		w.timer = time.AfterFunc(w.idle, w.fire)
		return
	}
	w.timer.Reset(w.idle)
}

// opened registers c; it reports false when the step is already over.
func (w *watch) opened(c *conn) bool {
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return false
	}
	w.open++
	w.conns[c] = struct{}{}
	w.mu.Unlock()
	w.active(c.host)
	return true
}

func (w *watch) closed(c *conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.conns, c)
	w.open--
	if w.open == 0 && w.timer != nil {
		w.timer.Stop()
	}
}

// closeAll closes the connections of a step that is over (idle, past its
// deadline or stopped): a read blocked on one returns.
func (w *watch) closeAll() {
	w.mu.Lock()
	w.done = true
	cs := make([]*conn, 0, len(w.conns))
	for c := range w.conns {
		cs = append(cs, c)
	}
	if w.proxy != "" {
		proxies.Delete(w.proxy)
	}
	w.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

func (w *watch) read(n int) {
	w.mu.Lock()
	f := w.onRead
	w.mu.Unlock()
	if f != nil {
		f(n)
	}
}

// OnRead makes every connection dialed under ctx's Watch report the bytes
// it reads to fn (a progress bar). Without a Watch in ctx it does nothing.
func OnRead(ctx context.Context, fn func(n int)) {
	if w, ok := ctx.Value(watchKey{}).(*watch); ok {
		w.mu.Lock()
		w.onRead = fn
		w.mu.Unlock()
	}
}

// conn reports its traffic to a watch.
type conn struct {
	net.Conn
	w    *watch
	host string
	once sync.Once
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.w.active(c.host)
		c.w.read(n)
	}
	return n, err
}

func (c *conn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.w.active(c.host)
	}
	return n, err
}

func (c *conn) Close() error {
	c.once.Do(func() { c.w.closed(c) })
	return c.Conn.Close()
}

// DialContext dials like a net.Dialer (giving up on the connect itself
// after the idle limit) and, when ctx carries a Watch, returns a
// connection whose traffic postpones it.
func DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	w, _ := ctx.Value(watchKey{}).(*watch)
	d := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if w != nil && w.idle > 0 {
		d.Timeout = w.idle
	}
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		if w != nil && w.idle > 0 && ctx.Err() == nil && isTimeout(err) {
			return nil, fmt.Errorf("%w: %w", &Error{Host: addr, Idle: w.idle}, err)
		}
		return nil, err
	}
	if w == nil {
		return c, nil
	}
	wc := &conn{Conn: c, w: w, host: addr}
	if !w.opened(wc) {
		c.Close()
		return nil, fmt.Errorf("dial %s: %w", addr, context.Cause(w.ctx))
	}
	return wc, nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Transport returns a clone of http.DefaultTransport that dials with
// DialContext. It keeps no idle connections between requests: a
// connection's traffic must count for the step that dialed it.
func Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = DialContext
	t.DisableKeepAlives = true
	return t
}
