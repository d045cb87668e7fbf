package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"

	"github.com/wharfhq/wharf/internal/core/store"
)

// Watch implements Watcher with etcd's own watch: it sees the commits of
// every replica. The watch runs on a member that passes its health checks
// and has a leader; when it breaks, or its member fails a check (a stopped
// or cut-off member may keep the stream open and send nothing), it resumes
// on another member from the last revision it delivered, so no commit is
// skipped. Only when etcd has compacted that revision away does the channel
// close.
//
// Progress marks: after each health check round (a linearizable read that
// returned revision R, sent at time T), the watch's member is asked for a
// progress report; once the watch has delivered every commit up to R (its
// events, or the member's report that it has sent everything up to R), it
// sends a mark as of T. A watch on a member that stopped, lost the quorum
// or fell behind sends no marks.
func (e *Store) Watch(ctx context.Context, bucket string) (<-chan store.Event, error) {
	if bucket == "" {
		return nil, errors.New("store: watch: empty bucket name")
	}
	// Start from the current revision, so that every commit after Watch
	// returns is seen even though etcd sets the watch up asynchronously.
	var start int64
	err := e.call(func(ctx context.Context, cli *clientv3.Client) error {
		resp, err := cli.Get(ctx, e.seqKey(bucket), clientv3.WithCountOnly())
		if err == nil {
			start = resp.Header.Revision
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: etcd: watch %s: %w", bucket, err)
	}
	wctx, wcancel := context.WithCancel(ctx)
	stop := context.AfterFunc(e.ctx, wcancel)
	w := &watch{e: e, bucket: bucket, prefix: e.bucketPrefix(bucket), out: make(chan store.Event), last: start}
	go func() {
		defer close(w.out)
		defer stop()
		defer wcancel()
		w.run(wctx)
	}()
	return w.out, nil
}

type watch struct {
	e              *Store
	bucket, prefix string
	out            chan store.Event
	last           int64        // every commit up to here is delivered
	pending        []checkpoint // checkpoints not yet proven, oldest first
	proven         time.Time    // AsOf of the last mark sent
	asked          time.Time    // the checkpoint of the last progress request
}

func (w *watch) run(ctx context.Context) {
	for try := 0; ctx.Err() == nil; try++ {
		// Only a member that passed its last check: a stopped one would
		// hold the watch (and the client would wait for it to come back).
		if ep := w.e.pick(w.e.rr.Add(1), 0); ep.isHealthy() {
			if compacted := w.on(ctx, ep); compacted || ctx.Err() != nil {
				return
			}
		}
		select { // a short pause before resuming, so a dead cluster is not spun on
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// on follows the bucket on ep's member until the stream breaks, the member
// fails a health check or ctx ends. It reports whether the revision to
// resume from was compacted away.
func (w *watch) on(ctx context.Context, ep *endpoint) (compacted bool) {
	// A stream of its own (the client shares one stream among the watches
	// whose contexts carry the same metadata): a stream that etcd or the
	// client is tearing down after a fault must not swallow this watch.
	n := w.e.streams.Add(1)
	sctx, scancel := context.WithCancel(metadata.AppendToOutgoingContext(clientv3.WithRequireLeader(ctx), "wharf-watch", strconv.FormatUint(n, 10)))
	defer scancel()
	sick := ep.sickCh()
	go func() { // Watch itself waits while the client connects
		select {
		case <-sick:
			scancel()
		case <-sctx.Done():
		}
	}()
	wch := ep.cli.Watch(sctx, w.prefix, clientv3.WithPrefix(), clientv3.WithRev(w.last+1))
	ck, next := w.e.latest()
	w.note(ck)
	w.asked = time.Time{}
	w.ask(sctx, ep, ck)
	for {
		select {
		case wr, ok := <-wch:
			if !ok {
				return false
			}
			if wr.CompactRevision != 0 {
				return true
			}
			if wr.Err() != nil {
				return false
			}
			if wr.IsProgressNotify() {
				w.last = max(w.last, wr.Header.Revision)
			}
			for _, ev := range wr.Events {
				out := store.Event{Bucket: w.bucket, Key: strings.TrimPrefix(string(ev.Kv.Key), w.prefix)}
				if ev.Type == clientv3.EventTypeDelete {
					out.Deleted = true
				} else {
					out.Value = ev.Kv.Value
				}
				if !w.send(ctx, out) {
					return false
				}
				w.last = max(w.last, ev.Kv.ModRevision)
			}
		case <-next:
			ck, next = w.e.latest()
			w.note(ck)
			w.ask(sctx, ep, ck)
		case <-sick:
			return false
		case <-ctx.Done():
			return false
		}
		if !w.mark(ctx) {
			return false
		}
	}
}

// ask asks the watch's member for a progress report after checkpoint c,
// on the watch's stream (sctx names it). The member answers once the watch
// has sent everything up to its revision.
func (w *watch) ask(sctx context.Context, ep *endpoint, c checkpoint) {
	// Every member's check makes a checkpoint; one request per
	// ProgressInterval is enough.
	if c.at.Sub(w.asked) >= store.ProgressInterval {
		w.asked = c.at
		// The client hands the request to the stream's loop, which does
		// not take it while it waits for a member to connect: bounded.
		rctx, cancel := context.WithTimeout(sctx, 100*time.Millisecond)
		_ = ep.cli.RequestProgress(rctx)
		cancel()
	}
}

func (w *watch) send(ctx context.Context, ev store.Event) bool {
	select {
	case w.out <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

// note adds a checkpoint to prove.
func (w *watch) note(c checkpoint) {
	if !c.at.After(w.proven) || (len(w.pending) > 0 && !c.at.After(w.pending[len(w.pending)-1].at)) {
		return
	}
	if len(w.pending) == 16 { // a watch that lags far keeps the newest
		w.pending = w.pending[1:]
	}
	w.pending = append(w.pending, c)
}

// mark sends a progress mark for the newest checkpoint the watch has
// caught up with.
func (w *watch) mark(ctx context.Context) bool {
	i := 0
	for i < len(w.pending) && w.pending[i].rev <= w.last {
		i++
	}
	if i == 0 {
		return true
	}
	at := w.pending[i-1].at
	w.pending = w.pending[i:]
	w.proven = at
	return w.send(ctx, store.Event{Bucket: w.bucket, Progress: true, AsOf: at})
}
