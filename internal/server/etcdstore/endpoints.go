package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wharfhq/wharf/internal/core/store"
)

// Endpoints. The store keeps one etcd client per member instead of one
// client balancing over all of them: a member that stops answering (a
// stopped process, a machine cut off from the others) keeps its TCP
// connection open, and a balancing client goes on sending it its share of
// the requests. Here each request goes to a member that answered the last
// health check, each try is bounded by CallTimeout, and a try that fails or
// times out is sent again to the next member.
//
// The health check is a linearizable read of every member every
// HealthInterval. It proves two things: that the member serves (a member
// without a leader, or cut off from the quorum, cannot answer it), and, by
// the revision it returns, which commits existed when it was sent. The
// watches use the latter for their progress marks (watch.go).

// endpoint is one member's client and its health.
type endpoint struct {
	addr string
	cli  *clientv3.Client

	mu      sync.Mutex
	healthy bool
	err     string
	sick    chan struct{} // closed when the member turns unhealthy; replaced when it recovers
}

func newEndpoint(addr string, cli *clientv3.Client) *endpoint {
	return &endpoint{addr: addr, cli: cli, healthy: true, sick: make(chan struct{})}
}

func (ep *endpoint) isHealthy() bool {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.healthy
}

// setHealth records a check's or a request's outcome.
func (ep *endpoint) setHealth(err error) {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if err == nil {
		if !ep.healthy {
			ep.healthy, ep.err = true, ""
			ep.sick = make(chan struct{})
		}
		return
	}
	ep.err = err.Error()
	if ep.healthy {
		ep.healthy = false
		close(ep.sick)
	}
}

// sickCh is closed when the member turns unhealthy (now, if it is).
func (ep *endpoint) sickCh() <-chan struct{} {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.sick
}

// Health implements store.HealthReporter: each member as last checked.
func (e *Store) Health() []store.EndpointHealth {
	out := make([]store.EndpointHealth, len(e.eps))
	for i, ep := range e.eps {
		ep.mu.Lock()
		out[i] = store.EndpointHealth{Endpoint: ep.addr, Healthy: ep.healthy, Error: ep.err}
		ep.mu.Unlock()
	}
	return out
}

// Stats implements store.StatsReporter.
func (e *Store) Stats() store.Stats {
	return store.Stats{Retries: e.retries.Load(), Conflicts: e.conflicts.Load(), Ambiguous: e.ambiguous.Load()}
}

// pick returns the endpoint for try number try of a request that started
// at start: the healthy members in turn (all of them when none is).
func (e *Store) pick(start uint32, try int) *endpoint {
	var healthy [8]*endpoint
	hs := healthy[:0]
	for _, ep := range e.eps {
		if ep.isHealthy() {
			hs = append(hs, ep)
		}
	}
	if len(hs) == 0 {
		hs = e.eps
	}
	return hs[(int(start)+try)%len(hs)]
}

// call runs op against one member after another until it succeeds, fails
// for a reason another member would not change, or RequestTimeout passes.
// Each try gets CallTimeout. op must be safe to run more than once (reads;
// commits guard themselves, see commit).
func (e *Store) call(op func(ctx context.Context, cli *clientv3.Client) error) error {
	deadline := time.Now().Add(e.opts.RequestTimeout)
	start := e.rr.Add(1)
	for try := 0; ; try++ {
		ep := e.pick(start, try)
		cd := time.Now().Add(e.opts.CallTimeout)
		if cd.After(deadline) {
			cd = deadline
		}
		ctx, cancel := context.WithDeadline(e.ctx, cd)
		err := op(ctx, ep.cli)
		cancel()
		if err == nil {
			return nil
		}
		if e.ctx.Err() != nil || !retryable(err) {
			return err
		}
		ep.setHealth(err)
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%w (no member answered within %s; last tried %s)", err, e.opts.RequestTimeout, ep.addr)
		}
		e.retries.Add(1)
		if (try+1)%len(e.eps) == 0 { // every member failed once: let the cluster settle
			select {
			case <-time.After(50 * time.Millisecond):
			case <-e.ctx.Done():
				return err
			}
		}
	}
}

// retryable reports whether another member, or the same one a moment
// later, may answer the request that failed with err.
func retryable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	switch rpctypes.Error(err) {
	case rpctypes.ErrNoLeader, rpctypes.ErrLeaderChanged, rpctypes.ErrNotCapable, rpctypes.ErrStopped,
		rpctypes.ErrTimeout, rpctypes.ErrTimeoutDueToLeaderFail, rpctypes.ErrTimeoutDueToConnectionLost,
		rpctypes.ErrTimeoutWaitAppliedIndex, rpctypes.ErrUnhealthy, rpctypes.ErrTooManyRequests:
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}

// checkpoint is a linearizable read's evidence: every commit acknowledged
// before at was at or below rev.
type checkpoint struct {
	at  time.Time
	rev int64
}

// healthLoop checks one member each HealthInterval until Close. Each
// member has its own loop, so a member that does not answer delays the
// checks (and the checkpoints) of no other.
func (e *Store) healthLoop(ep *endpoint) {
	defer e.wg.Done()
	tick := time.NewTicker(e.opts.HealthInterval)
	defer tick.Stop()
	for {
		e.check(ep)
		select {
		case <-tick.C:
		case <-e.ctx.Done():
			return
		}
	}
}

// check reads from ep linearizably and publishes the answer as a
// checkpoint.
func (e *Store) check(ep *endpoint) {
	at := time.Now()
	ctx, cancel := context.WithTimeout(e.ctx, e.opts.HealthTimeout)
	resp, err := ep.cli.Get(ctx, e.seqKey("health"), clientv3.WithCountOnly())
	cancel()
	if e.ctx.Err() != nil {
		return
	}
	ep.setHealth(err)
	if err == nil {
		e.publish(checkpoint{at: at, rev: resp.Header.Revision})
	}
}

// publish makes c the latest checkpoint and wakes the watches.
func (e *Store) publish(c checkpoint) {
	e.ckMu.Lock()
	defer e.ckMu.Unlock()
	if !c.at.After(e.ck.at) {
		return
	}
	e.ck = c
	close(e.ckCh)
	e.ckCh = make(chan struct{})
}

// latest returns the latest checkpoint and a channel closed at the next.
func (e *Store) latest() (checkpoint, <-chan struct{}) {
	e.ckMu.Lock()
	defer e.ckMu.Unlock()
	return e.ck, e.ckCh
}
