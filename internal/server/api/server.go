package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/time/rate"

	"github.com/wharfhq/wharf/internal/server/channel"
	"github.com/wharfhq/wharf/internal/server/fleet"
	"github.com/wharfhq/wharf/internal/server/follow"
	"github.com/wharfhq/wharf/internal/server/policystate"
	"github.com/wharfhq/wharf/internal/server/tokens"
)

// Server is wharf's HTTP API. Build it with New; it is safe for concurrent
// use. Its state is kept by the server packages it calls (policystate,
// tokens, revocations, fleet, sessions, audit, channel), with their caches;
// it holds itself the rate limiters, the catalog and the ETag of the last
// bundle served.
type Server struct {
	deps Deps
	e    *echo.Echo
	ui   *console
	log  *slog.Logger
	now  func() time.Time

	metrics *metrics

	limMu    sync.Mutex
	limiters map[string]*rate.Limiter // per token

	clients  *clientLimiters // per client address (limiter.go)
	refusals *clientLimiters // audit of 401/403 per client address and route (audit.go)

	toks *tokens.Cache[*rate.Limiter] // known tokens with their rate limiters (tokens.go)
	used *tokens.LastUse              // when each token was last used, written at most once per token per 5 minutes

	etag atomic.Pointer[bundleTag] // the bundle ETag of the last policy version served

	reqPool sync.Pool // *request

	// The policy: layers, history, the head and the caches of the
	// compiled policy and the signed bundle (policystate).
	pol *policystate.State[Decider]

	rep *follow.Follower // cache invalidation from the store's watch (replica.go)

	inv      *fleet.Store     // the fleet inventory (inventory.go)
	machines *clientLimiters  // per-machine report rate
	chans    *channel.Builder // nil without Deps.ChannelDir (channel.go)

	mcpReg pluginServers // the MCP registry's caches (mcpregistry.go)
}

type principal struct {
	TokenID string
	Role    Role
	Quota   fleet.Quota     // the token's inventory quota
	Who     tokens.Identity // the person, groups and labels the token speaks for
}

const principalKey = "wharf.principal"

// New builds a Server. It creates the bundle signing key in the store on
// first use. It does not create tokens: see EnsureAdminToken.
func New(d Deps) (*Server, error) {
	if d.Store == nil {
		return nil, errors.New("api: Deps.Store is required")
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.BodyLimit <= 0 {
		d.BodyLimit = 1 << 20
	}
	if d.RequestTimeout <= 0 {
		d.RequestTimeout = 30 * time.Second
	}
	if d.RateLimit == 0 {
		d.RateLimit = 50
	}
	if d.RateBurst <= 0 && d.RateLimit > 0 {
		d.RateBurst = int(math.Max(1, math.Ceil(2*d.RateLimit)))
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.StateCacheTTL == 0 {
		d.StateCacheTTL = time.Second
	}
	s := &Server{deps: d, log: d.Logger, now: d.Now, limiters: map[string]*rate.Limiter{}}
	s.reqPool.New = func() any { return new(request) }
	s.rep = follow.New(d.StateCacheTTL, d.Logger)
	s.toks = tokens.NewCache(d.Store, d.StateCacheTTL, s.rep.Fresh, func(t *tokens.Record) *rate.Limiter { return s.limiter(t.ID) })
	s.used = tokens.NewLastUse(d.Store, 0)
	if d.MaxClients <= 0 {
		d.MaxClients = maxClientLimiters
		s.deps.MaxClients = d.MaxClients
	}
	s.clients = newClientLimiters(d.MaxClients, s.newLimiter)
	if d.ReportRate == 0 {
		s.deps.ReportRate = defaultReportRate
	}
	if s.deps.ReportBurst <= 0 {
		s.deps.ReportBurst = defaultReportBurst
	}
	s.machines = newClientLimiters(maxMachineLimiters, s.machineLimiter)
	s.inv = fleet.Open(d.Store, d.Inventory)
	s.refusals = newClientLimiters(d.MaxClients, func() *rate.Limiter {
		return rate.NewLimiter(rate.Every(time.Minute/refusalPerMinute), refusalBurst)
	})
	var compile func(context.Context, []Layer) (Decider, error)
	if d.Policy != nil {
		compile = func(ctx context.Context, ls []Layer) (Decider, error) { return d.Policy(ctx, toPolicyLayers(ls)) }
	}
	pol, err := policystate.New(d.Store, policystate.Options[Decider]{
		Compile: compile, TTL: d.StateCacheTTL, Fresh: s.rep.Fresh, Now: d.Now, Logger: d.Logger})
	if err != nil {
		return nil, err
	}
	s.pol = pol
	s.metrics = newMetrics()
	s.registerStoreMetrics() // storehealth.go
	if d.ChannelDir != "" {
		s.chans = channel.NewBuilder(d.ChannelDir, d.Store, &channel.Vendor{Fetcher: d.Fetcher})
	}

	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.errorHandler
	e.IPExtractor = ipExtractor(d.TrustedProxies)
	ui, err := newConsole(s) // the web console under /ui/ (ui.go)
	if err != nil {
		return nil, err
	}
	s.ui = ui
	// One middleware (recover, metrics and logs, limits) for every request,
	// matched or not; each route's authorization is composed with its
	// handler once, here, rather than on every request.
	e.Use(s.middleware)
	for _, r := range s.routes() {
		e.Add(r.Method, r.Path, s.authorize(r.RouteInfo)(r.handler))
	}
	// The channels' git repositories go through the same middleware
	// (metrics, logs, limits); their authorization depends on the
	// channel, so serveGit decides it (channel.go).
	e.GET(gitRoute, s.serveGit)
	e.POST(gitRoute, s.serveGit)
	s.e = e
	return s, nil
}

// Handler returns the HTTP handler (for httptest or a custom http.Server).
func (s *Server) Handler() http.Handler { return s }

// ServeHTTP sends the console's paths to the console and everything else
// to the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.ui.owns(r.URL.Path) {
		s.ui.e.ServeHTTP(w, r)
		return
	}
	s.e.ServeHTTP(w, r)
}

// Serve serves on ln until ctx is cancelled, then shuts down gracefully:
// it stops accepting, lets in-flight requests finish (up to grace), and
// returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       s.deps.RequestTimeout + 10*time.Second,
		WriteTimeout:      s.deps.RequestTimeout + 10*time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.follow(ctx) // other replicas' commits invalidate this one's caches
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	s.log.Info("shutting down", "grace", grace)
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("api: graceful shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// request is the echo.Context of one request inside the middleware, with
// what the middleware learns about it: when it started and who is calling.
// Requests are pooled; nothing may keep one after its handler returns.
type request struct {
	echo.Context
	start  time.Time
	caller principal
	authed bool // caller is set
}

// middleware is the API's and the console's one middleware: it recovers
// from a handler panic (a 500, not a crash), records metrics by route
// pattern (so /v1/plugins/a/b and /v1/plugins/c/d share one series), logs
// the request and applies the body limit and the request deadline.
func (s *Server) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := s.reqPool.Get().(*request)
		*r = request{Context: c, start: time.Now()}
		if err := s.run(r, next); err != nil {
			c.Error(err)
		}
		s.record(r)
		*r = request{}
		s.reqPool.Put(r)
		return nil
	}
}

// run runs next within the limits, turning a panic into an error (a 500
// that is counted and logged like any other).
func (s *Server) run(r *request, next echo.HandlerFunc) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return s.limits(r, next)
}

// record counts the request in the metrics and logs it.
func (s *Server) record(r *request) {
	routePath := r.Path()
	if routePath == "" {
		routePath = "unmatched"
	}
	req := r.Request()
	status := r.Response().Status
	d := time.Since(r.start)
	s.metrics.observe(routePath, req.Method, status, d)
	if s.log.Enabled(req.Context(), slog.LevelInfo) {
		attrs := make([]slog.Attr, 0, 7)
		attrs = append(attrs, slog.String("method", req.Method), slog.String("route", routePath), slog.String("path", req.URL.Path),
			slog.Int("status", status), slog.Float64("duration_ms", float64(d.Microseconds())/1000))
		if p, ok := callerOf(r); ok {
			attrs = append(attrs, slog.String("token", p.TokenID), slog.String("role", string(p.Role)))
		}
		s.log.LogAttrs(req.Context(), slog.LevelInfo, "request", attrs...)
	}
}

// limits applies the body limit and the request deadline around next.
func (s *Server) limits(c *request, next echo.HandlerFunc) error {
	req := c.Request()
	if req.ContentLength > s.deps.BodyLimit {
		return apiErr(http.StatusRequestEntityTooLarge, CodeTooLarge, "",
			"request body is %d bytes; the limit is %d", req.ContentLength, s.deps.BodyLimit)
	}
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = http.MaxBytesReader(c.Response(), req.Body, s.deps.BodyLimit)
	}
	// Requests that change state may fetch from the network (marketplace
	// add/update) and get a deadline their handlers pass on; reads of
	// local state are bounded by the HTTP server's write timeout, which
	// keeps the hot read paths (search, bundle 304) free of a timer each.
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		ctx, cancel := context.WithTimeout(req.Context(), s.deps.RequestTimeout)
		defer cancel()
		c.SetRequest(req.WithContext(ctx))
	}
	err := next(c)
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", errDeadline, err)
	}
	return err
}

// authorize enforces one row of the matrix: 401 without a valid token, 403
// for a role not in the row, 429 over the token's rate.
func (s *Server) authorize(ri RouteInfo) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if ri.Roles == nil {
			return next
		}
		return func(c echo.Context) error {
			h := c.Request().Header.Get("Authorization")
			scheme, secret, ok := strings.Cut(h, " ")
			if h == "" {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="wharf"`)
				s.auditRefusal(c, http.StatusUnauthorized, "", "", "no bearer token")
				return withHint(apiErr(http.StatusUnauthorized, CodeUnauthorized, "Authorization", "no bearer token"), hintToken)
			}
			if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(secret) == "" {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="wharf", error="invalid_request"`)
				s.auditRefusal(c, http.StatusUnauthorized, "", "", "malformed Authorization header")
				return withHint(apiErr(http.StatusUnauthorized, CodeUnauthorized, "Authorization",
					"the Authorization header is not \"Bearer <token>\""), hintToken)
			}
			r, _ := c.(*request)
			var now time.Time
			if r != nil {
				now = r.start
			} else {
				now = time.Now()
			}
			tok, err := s.knownToken(strings.TrimSpace(secret), now)
			if err != nil {
				return err
			}
			if tok.Rec == nil {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="wharf", error="invalid_token"`)
				s.auditRefusal(c, http.StatusUnauthorized, "", "", "unknown or revoked token")
				return withHint(apiErr(http.StatusUnauthorized, CodeUnauthorized, "Authorization",
					"the bearer token is unknown or was revoked"), hintToken)
			}
			if tok.Rec.Expired(s.now()) {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="wharf", error="invalid_token", error_description="token expired"`)
				s.auditRefusal(c, http.StatusUnauthorized, tok.Rec.ID, tok.Rec.Role, "expired token")
				return withHint(apiErr(http.StatusUnauthorized, CodeUnauthorized, "Authorization", "%s", tok.Rec.ExpiredMessage()), hintToken)
			}
			p := principal{TokenID: tok.Rec.ID, Role: tok.Rec.Role, Quota: tok.Rec.Quota(), Who: tok.Rec.Identity}
			if r != nil {
				r.caller, r.authed = p, true
			} else {
				c.Set(principalKey, p)
			}
			if !roleAllowed(ri.Roles, p.Role) {
				s.auditRefusal(c, http.StatusForbidden, p.TokenID, p.Role, "role not allowed")
				return withHint(apiErr(http.StatusForbidden, CodeForbidden, "",
					"role %q may not %s %s; allowed: %s", p.Role, ri.Method, ri.Path, joinRoles(ri.Roles)),
					"ask an admin of this server for a token with one of those roles (wharf token create --role ...)")
			}
			if err := s.take(tok.Val, p.TokenID, now); err != nil {
				return err
			}
			s.noteUse(p.TokenID)
			return next(c)
		}
	}
}

func joinRoles(rs []Role) string {
	ss := make([]string, len(rs))
	for i, r := range rs {
		ss[i] = string(r)
	}
	return strings.Join(ss, ", ")
}

// allow takes one token from the bucket of a token ID.
func (s *Server) allow(key string) error {
	return s.take(nil, key, time.Now())
}

// allowClient takes one token from the bucket of the client's address for
// what (e.g. "console-signin"): a bounded set of buckets, keyed by the
// address only.
func (s *Server) allowClient(c echo.Context, what string) error {
	if s.deps.RateLimit < 0 {
		return nil
	}
	return s.take(s.clients.get(what+" "+clientKey(c)), "", s.now())
}

func (s *Server) newLimiter() *rate.Limiter {
	return rate.NewLimiter(rate.Limit(s.deps.RateLimit), s.deps.RateBurst)
}

// limiter returns key's bucket, creating it on first use; nil when rate
// limiting is off.
func (s *Server) limiter(key string) *rate.Limiter {
	if s.deps.RateLimit < 0 {
		return nil
	}
	s.limMu.Lock()
	defer s.limMu.Unlock()
	l := s.limiters[key]
	if l == nil {
		l = s.newLimiter()
		s.limiters[key] = l
	}
	return l
}

// take takes one token at now from l, or from key's bucket when l is nil.
func (s *Server) take(l *rate.Limiter, key string, now time.Time) error {
	if s.deps.RateLimit < 0 {
		return nil
	}
	if l == nil {
		l = s.limiter(key)
	}
	if l.AllowN(now, 1) {
		return nil
	}
	r := l.ReserveN(now, 1)
	d := r.DelayFrom(now)
	if d <= 0 {
		return nil
	}
	r.CancelAt(now)
	secs := int(math.Ceil(d.Seconds()))
	who := "this token"
	if key == "" {
		who = "this client address"
	}
	return &APIError{Status: http.StatusTooManyRequests, Code: CodeRateLimited, RetryAfter: secs,
		Message: fmt.Sprintf("rate limit of %g requests/s for %s exceeded; retry in %ds", s.deps.RateLimit, who, secs)}
}

// forgetLimiter drops key's bucket (a revoked token).
func (s *Server) forgetLimiter(key string) {
	s.limMu.Lock()
	delete(s.limiters, key)
	s.limMu.Unlock()
}

func (s *Server) caller(c echo.Context) principal {
	p, _ := callerOf(c)
	return p
}

// callerOf returns the authenticated caller of c, if any.
func callerOf(c echo.Context) (principal, bool) {
	if r, ok := c.(*request); ok && r.authed {
		return r.caller, true
	}
	p, ok := c.Get(principalKey).(principal)
	return p, ok
}

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	decisions *prometheus.CounterVec
	handler   http.Handler

	// The series of each route and method, resolved once: a request finds
	// them with one lookup instead of hashing its labels into both vectors.
	seriesMu sync.Mutex                                // held by writers
	series   atomic.Pointer[map[routeKey]*routeSeries] // copied on write
}

type routeKey struct{ route, method string }

// routeSeries is one route's and method's latency histogram and request
// counters, one per status code seen.
type routeSeries struct {
	key     routeKey
	latency prometheus.Observer
	mu      sync.Mutex
	codes   atomic.Pointer[[]codeCounter] // copied on write
}

type codeCounter struct {
	code int
	c    prometheus.Counter
}

// maxRouteSeries bounds the cache; beyond it (requests with made-up
// methods on every route) series are looked up in the vectors directly.
const maxRouteSeries = 256

// observe counts one request of route and method that answered status in d.
func (m *metrics) observe(route, method string, status int, d time.Duration) {
	rs := m.routeSeries(route, method)
	if rs == nil {
		m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
		m.latency.WithLabelValues(route, method).Observe(d.Seconds())
		return
	}
	rs.counter(m.requests, status).Inc()
	rs.latency.Observe(d.Seconds())
}

func (m *metrics) routeSeries(route, method string) *routeSeries {
	k := routeKey{route, method}
	if rs := (*m.series.Load())[k]; rs != nil {
		return rs
	}
	m.seriesMu.Lock()
	defer m.seriesMu.Unlock()
	cur := *m.series.Load()
	if rs := cur[k]; rs != nil {
		return rs
	}
	if len(cur) >= maxRouteSeries {
		return nil
	}
	rs := &routeSeries{key: k, latency: m.latency.WithLabelValues(route, method)}
	next := make(map[routeKey]*routeSeries, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	next[k] = rs
	m.series.Store(&next)
	return rs
}

func (rs *routeSeries) counter(v *prometheus.CounterVec, status int) prometheus.Counter {
	if cs := rs.codes.Load(); cs != nil {
		for _, c := range *cs {
			if c.code == status {
				return c.c
			}
		}
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var cur []codeCounter
	if cs := rs.codes.Load(); cs != nil {
		cur = *cs
	}
	for _, c := range cur {
		if c.code == status {
			return c.c
		}
	}
	c := v.WithLabelValues(rs.key.route, rs.key.method, strconv.Itoa(status))
	next := append(append(make([]codeCounter, 0, len(cur)+1), cur...), codeCounter{status, c})
	rs.codes.Store(&next)
	return c
}

func newMetrics() *metrics {
	reg := prometheus.NewRegistry()
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_http_requests_total", Help: "HTTP requests by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "wharf_http_request_duration_seconds", Help: "HTTP request latency by route pattern and method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_policy_decisions_total", Help: "Policy decisions by outcome (allowed, denied, forced-on, forced-off, error).",
		}, []string{"outcome"}),
	}
	m.series.Store(&map[routeKey]*routeSeries{})
	reg.MustRegister(m.requests, m.latency, m.decisions,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return m
}

func (s *Server) metricsHandler(c echo.Context) error {
	s.metrics.handler.ServeHTTP(c.Response(), c.Request())
	return nil
}
