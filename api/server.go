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
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/time/rate"
)

// Server is wharf's HTTP API. Build it with New; it is safe for concurrent
// use and holds no state that is not also in the store, except caches keyed
// by content (compiled policy, built bundle) and per-token rate limiters.
type Server struct {
	deps Deps
	e    *echo.Echo
	log  *slog.Logger
	now  func() time.Time

	signer *bundleSigner

	metrics *metrics

	limMu    sync.Mutex
	limiters map[string]*rate.Limiter

	tokMu    sync.RWMutex
	tokCache map[string]cachedToken // sha256 of secret → token

	headMu  sync.RWMutex
	headVal policyHead
	headExp time.Time

	polMu    sync.Mutex
	polCache *compiledPolicy // last compiled policy, keyed by its version

	bunMu     sync.Mutex
	bunCache  *builtBundle // last built bundle, keyed by its version
	bunBuilds int          // how many times a bundle was built (tests)

	rep replicaState // cache invalidation from the store's watch (replica.go)
}

type principal struct {
	TokenID string
	Role    Role
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
	s := &Server{deps: d, log: d.Logger, now: d.Now, limiters: map[string]*rate.Limiter{}, tokCache: map[string]cachedToken{}}
	signer, err := loadOrCreateSigner(d.Store)
	if err != nil {
		return nil, err
	}
	s.signer = signer
	s.metrics = newMetrics()

	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.errorHandler
	ui, err := newConsole(s) // the web console under /ui/ (ui.go)
	if err != nil {
		return nil, err
	}
	e.Pre(ui.dispatch)
	e.Use(s.recoverMiddleware, s.observe, s.limits)
	for _, r := range s.routes() {
		e.Add(r.Method, r.Path, r.handler, s.authorize(r.RouteInfo))
	}
	s.e = e
	return s, nil
}

// Handler returns the HTTP handler (for httptest or a custom http.Server).
func (s *Server) Handler() http.Handler { return s.e }

// Serve serves on ln until ctx is cancelled, then shuts down gracefully:
// it stops accepting, lets in-flight requests finish (up to grace), and
// returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	hs := &http.Server{
		Handler:           s.e,
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

// recoverMiddleware turns a handler panic into a 500 without crashing the
// process.
func (s *Server) recoverMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return next(c)
	}
}

// observe logs every request and records metrics by route pattern, so that
// /v1/plugins/a/b and /v1/plugins/c/d share one series.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		routePath := c.Path()
		if routePath == "" {
			routePath = "unmatched"
		}
		status := c.Response().Status
		d := time.Since(start)
		method := c.Request().Method
		s.metrics.requests.WithLabelValues(routePath, method, strconv.Itoa(status)).Inc()
		s.metrics.latency.WithLabelValues(routePath, method).Observe(d.Seconds())
		if s.log.Enabled(c.Request().Context(), slog.LevelInfo) {
			attrs := []any{"method", method, "route", routePath, "path", c.Request().URL.Path,
				"status", status, "duration_ms", float64(d.Microseconds()) / 1000}
			if p, ok := c.Get(principalKey).(principal); ok {
				attrs = append(attrs, "token", p.TokenID, "role", p.Role)
			}
			s.log.Info("request", attrs...)
		}
		return nil
	}
}

// limits applies the body limit and the request deadline.
func (s *Server) limits(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
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
				return apiErr(http.StatusUnauthorized, CodeUnauthorized, "Authorization",
					"no bearer token; send Authorization: Bearer <token> (an admin creates one with: wharf token create --role developer)")
			}
			if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(secret) == "" {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="wharf", error="invalid_request"`)
				return apiErr(http.StatusUnauthorized, CodeUnauthorized, "Authorization",
					"the Authorization header is not \"Bearer <token>\"")
			}
			tok, err := s.lookupToken(strings.TrimSpace(secret))
			if err != nil {
				return err
			}
			if tok == nil {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="wharf", error="invalid_token"`)
				return apiErr(http.StatusUnauthorized, CodeUnauthorized, "Authorization",
					"the bearer token is unknown or was revoked; ask an admin for a new one")
			}
			p := principal{TokenID: tok.ID, Role: tok.Role}
			c.Set(principalKey, p)
			if !roleAllowed(ri.Roles, tok.Role) {
				return apiErr(http.StatusForbidden, CodeForbidden, "",
					"role %q may not %s %s; allowed: %s", tok.Role, ri.Method, ri.Path, joinRoles(ri.Roles))
			}
			if err := s.allow(tok.ID); err != nil {
				return err
			}
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

// allow takes one token from the caller's bucket.
func (s *Server) allow(tokenID string) error {
	if s.deps.RateLimit < 0 {
		return nil
	}
	s.limMu.Lock()
	l := s.limiters[tokenID]
	if l == nil {
		l = rate.NewLimiter(rate.Limit(s.deps.RateLimit), s.deps.RateBurst)
		s.limiters[tokenID] = l
	}
	s.limMu.Unlock()
	r := l.Reserve()
	if d := r.Delay(); d > 0 {
		r.Cancel()
		secs := int(math.Ceil(d.Seconds()))
		return &APIError{Status: http.StatusTooManyRequests, Code: CodeRateLimited, RetryAfter: secs,
			Message: fmt.Sprintf("rate limit of %g requests/s for this token exceeded; retry in %ds", s.deps.RateLimit, secs)}
	}
	return nil
}

func (s *Server) caller(c echo.Context) principal {
	p, _ := c.Get(principalKey).(principal)
	return p
}

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz checks that the store answers.
func (s *Server) readyz(c echo.Context) error {
	if err := s.deps.Store.View(func(r storeReader) error {
		_, err := r.Get(bucketSettings, keySigningKey)
		return err
	}); err != nil {
		return &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "store is not readable: " + err.Error(), cause: err}
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	decisions *prometheus.CounterVec
	handler   http.Handler
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
	reg.MustRegister(m.requests, m.latency, m.decisions,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return m
}

func (s *Server) metricsHandler(c echo.Context) error {
	s.metrics.handler.ServeHTTP(c.Response(), c.Request())
	return nil
}
