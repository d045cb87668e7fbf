package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/policystate"
)

// readyTimeout bounds /readyz: a load balancer's probe gets an answer in
// time even when the store hangs.
const readyTimeout = 2 * time.Second

// Readiness is the body of /readyz.
type Readiness struct {
	Status string `json:"status"`
	// Store lists a shared store's servers with their health as last
	// checked; empty for an embedded store.
	Store []store.EndpointHealth `json:"store,omitempty"`
	// WatchLagSeconds is the age of the oldest proof that the caches
	// follow every change (-1: unproven; the caches read the store).
	// Absent without a store watch.
	WatchLagSeconds *float64 `json:"watchLagSeconds,omitempty"`
}

// readyz checks that the store answers a read within readyTimeout, and
// names the store servers that fail their health checks. One unhealthy
// server of a cluster that keeps its quorum does not make the replica
// unready: it reads and writes through the others.
func (s *Server) readyz(c echo.Context) error {
	var health []store.EndpointHealth
	if h, ok := s.deps.Store.(store.HealthReporter); ok {
		health = h.Health()
	}
	done := make(chan error, 1)
	go func() { // runs on when the store hangs; the store's own timeouts end it
		done <- s.deps.Store.View(func(r storeReader) error {
			_, err := r.Get(policystate.SettingsBucket, policystate.SigningKeyKey)
			return err
		})
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(readyTimeout):
		err = errStoreSlow
	}
	if err != nil {
		msg := "store is not readable: " + err.Error()
		if bad := unhealthy(health); bad != "" {
			msg += "; unhealthy store endpoints: " + bad
		}
		return &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: msg, cause: err}
	}
	r := Readiness{Status: "ready", Store: health}
	if s.rep.Followed() > 0 {
		lag := -1.0
		if p := s.proof(); !p.IsZero() {
			lag = time.Since(p).Seconds()
		}
		r.WatchLagSeconds = &lag
	}
	return c.JSON(http.StatusOK, r)
}

// errStoreSlow: the readiness read did not finish within readyTimeout.
var errStoreSlow = storeSlowError{}

type storeSlowError struct{}

func (storeSlowError) Error() string {
	return "no answer within " + readyTimeout.String()
}

// unhealthy names the endpoints that fail their checks, with the reason.
func unhealthy(hs []store.EndpointHealth) string {
	var bad []string
	for _, h := range hs {
		if !h.Healthy {
			bad = append(bad, h.Endpoint+" ("+h.Error+")")
		}
	}
	return strings.Join(bad, ", ")
}

// registerStoreMetrics adds the store's series to the metrics: its retries,
// conflicts and lost answers (etcd), its servers' health, how far behind
// the caches' proof of freshness is, and how often a cache lookup read the
// store for want of one.
func (s *Server) registerStoreMetrics() {
	reg := s.metrics.reg
	if sr, ok := s.deps.Store.(store.StatsReporter); ok {
		for _, c := range []struct {
			name, help string
			get        func(store.Stats) uint64
		}{
			{"wharf_store_retries_total", "Store requests sent again to another server after one failed or did not answer in time.", func(st store.Stats) uint64 { return st.Retries }},
			{"wharf_store_conflicts_total", "Store transactions run again because a concurrent commit changed what they read.", func(st store.Stats) uint64 { return st.Conflicts }},
			{"wharf_store_ambiguous_commits_total", "Store commits whose answer was lost and that were sent again (each applies at most once).", func(st store.Stats) uint64 { return st.Ambiguous }},
		} {
			get := c.get
			reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help},
				func() float64 { return float64(get(sr.Stats())) }))
		}
	}
	if hr, ok := s.deps.Store.(store.HealthReporter); ok {
		for i, h := range hr.Health() {
			reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "wharf_store_endpoint_healthy", Help: "1 when the store server passed its last health check.",
				ConstLabels: prometheus.Labels{"endpoint": h.Endpoint},
			}, func() float64 {
				if hs := hr.Health(); i < len(hs) && hs[i].Healthy {
					return 1
				}
				return 0
			}))
		}
	}
	if _, ok := s.deps.Store.(store.Watcher); ok {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wharf_store_watch_lag_seconds",
			Help: "Age of the oldest proof that the caches have every change (watch progress); -1 while unproven. Above 1 the caches read the store.",
		}, func() float64 {
			if p := s.proof(); !p.IsZero() {
				return time.Since(p).Seconds()
			}
			return -1
		}), prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "wharf_cache_read_through_total",
			Help: "Token and policy cache lookups that read the store because the watch had not proven the cache fresh.",
		}, func() float64 { return float64(s.rep.ReadThrough()) }))
	}
}
