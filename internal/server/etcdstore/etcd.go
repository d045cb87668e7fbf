// Package etcdstore is the store backend for several wharf servers sharing one
// etcd cluster. It is a package of its own so that only the server links
// etcd, gRPC and protobuf: the client and the agent use store's bbolt.
package etcdstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/wharfhq/wharf/internal/core/store"
)

// Store is the multi-replica backend: any number of wharf servers share one
// etcd cluster, and Update is serializable across all of them.
//
// Key layout, under the prefix (default "/wharf"):
//
//	<prefix>/<bucket>/<key>   a value
//	<prefix>/.seq/<bucket>    the bucket's NextSequence counter (decimal)
//	<prefix>/.del/<bucket>    touched by every transaction that deletes in the bucket
//	<prefix>/.txn/<time>-<handle>-<n>  one Update's commit marker, kept 5 minutes (see commit)
//
// A bucket name is path-escaped (so "/" in it cannot collide with a key) and a
// leading "." is escaped too, so no bucket shares the meta keys' space.
//
// Update is an optimistic transaction: every read in fn is served from one
// snapshot revision (NextSequence's counter excepted: it is read at its
// latest), and the commit is one etcd Txn that applies the writes
// only if nothing fn read changed since that revision: each key read has its
// mod revision compared, each List has its key range compared (no key in it
// modified after the snapshot) together with the bucket's deletion marker.
// On a conflict fn runs again on a fresh snapshot, so fn must have no effects
// outside the transaction.
//
// Each request goes to a member that answered its last health check, and
// is sent to the next one when it fails or takes longer than CallTimeout
// (endpoints.go). A commit carries a marker key of its own, so sending it
// again when its answer was lost applies it at most once (see commit).
type Store struct {
	eps    []*endpoint
	rr     atomic.Uint32 // spreads requests over the members
	opts   Options
	ctx    context.Context // canceled by Close
	cancel context.CancelFunc
	closed sync.Once
	wg     sync.WaitGroup // background loops

	ckMu sync.Mutex
	ck   checkpoint    // the latest health check's evidence
	ckCh chan struct{} // closed at the next checkpoint

	handle  string        // this handle's part of its commit markers
	markers atomic.Uint64 // commit markers made

	streams atomic.Uint64 // watch streams opened

	retries, conflicts, ambiguous atomic.Uint64
}

// Options tune Open. Zero values take the documented defaults.
type Options struct {
	// Prefix is prepended to every key; default "/wharf". Several wharf
	// deployments can share a cluster under different prefixes.
	Prefix string
	// DialTimeout bounds the first connection; default 5s.
	DialTimeout time.Duration
	// RequestTimeout bounds each request to etcd, all its tries on the
	// members together; default 10s.
	RequestTimeout time.Duration
	// CallTimeout bounds one try of a request on one member; on expiry the
	// request goes to the next member. Default 1s, etcd's default election
	// timeout: a member that holds a request longer has probably stopped or
	// lost its leader. A commit that times out is sent again safely.
	CallTimeout time.Duration
	// HealthInterval is how often every member is checked (a linearizable
	// read); default 250ms. HealthTimeout bounds each check; default 1s. A
	// member that fails a check gets no requests until it passes one, so
	// a member that stops answering costs about HealthInterval plus
	// HealthTimeout of delay.
	HealthInterval time.Duration
	HealthTimeout  time.Duration
	// MaxTxnOps is the cluster's --max-txn-ops (etcd's default is 128). A
	// transaction whose reads need more comparisons falls back to coarser
	// per-bucket ones; one that writes more keys than this fails.
	MaxTxnOps int
	// MaxAttempts is how often Update runs fn before giving up on conflicts
	// with concurrent writers; default 1000.
	MaxAttempts int
	// TLS, Username and Password are passed to the etcd client.
	TLS      *tls.Config
	Username string
	Password string
	// dialOptions go to every member's client (tests put interceptors
	// there that answer as a member under a fault would).
	dialOptions []grpc.DialOption
}

const defaultEtcdPrefix = "/wharf"

func (o Options) withDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = defaultEtcdPrefix
	}
	o.Prefix = strings.TrimRight(o.Prefix, "/")
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 10 * time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = time.Second
	}
	if o.HealthInterval <= 0 {
		o.HealthInterval = 250 * time.Millisecond
	}
	if o.HealthTimeout <= 0 {
		o.HealthTimeout = time.Second
	}
	if o.MaxTxnOps <= 0 {
		o.MaxTxnOps = 128
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 1000
	}
	return o
}

// Open connects to the etcd cluster at endpoints ("host:port" or
// "http(s)://host:port") and checks that it answers within DialTimeout.
func Open(endpoints []string, opts Options) (*Store, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("store: etcd: no endpoints; give at least one, e.g. etcd://127.0.0.1:2379")
	}
	opts = opts.withDefaults()
	if opts.Prefix == "" {
		return nil, errors.New("store: etcd: prefix \"/\" would put wharf's keys at the top of the cluster; use a prefix such as /wharf")
	}
	if len(endpoints) > 7 {
		return nil, fmt.Errorf("store: etcd: %d endpoints; an etcd cluster has at most 7 voting members, name those", len(endpoints))
	}
	ctx, cancel := context.WithCancel(context.Background())
	var id [8]byte
	for i := range id {
		id[i] = "0123456789abcdefghijklmnopqrstuvwxyz"[rand.IntN(36)]
	}
	e := &Store{opts: opts, ctx: ctx, cancel: cancel, ckCh: make(chan struct{}), handle: string(id[:])}
	for _, addr := range endpoints {
		cli, err := clientv3.New(clientv3.Config{
			Endpoints:   []string{addr},
			DialTimeout: opts.DialTimeout,
			// Keepalives close a connection whose member stopped
			// answering, so that a watch on it ends even when no request
			// is sent. (gRPC pings at most every 10s; the health checks
			// act sooner.)
			DialKeepAliveTime:    10 * time.Second,
			DialKeepAliveTimeout: 3 * time.Second,
			TLS:                  opts.TLS,
			Username:             opts.Username,
			Password:             opts.Password,
			Logger:               zap.NewNop(),
			DialOptions:          opts.dialOptions,
		})
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("store: etcd %s: %w; check the endpoints and that etcd is running", addr, err)
		}
		e.eps = append(e.eps, newEndpoint(addr, cli))
	}
	// clientv3.New does not wait for a connection; ask for something cheap so
	// a wrong address fails here, with the address in the message. One
	// member that answers is enough (the others may be down); all are asked
	// at once, so a dead first member does not delay the start.
	type probe struct {
		ep   *endpoint
		resp *clientv3.GetResponse
		err  error
	}
	probes := make(chan probe, len(e.eps))
	sent := time.Now() // a checkpoint is as of before its read was sent
	pctx, pcancel := context.WithTimeout(ctx, opts.DialTimeout)
	for _, ep := range e.eps {
		go func() {
			resp, err := ep.cli.Get(pctx, e.seqKey("probe"), clientv3.WithCountOnly())
			probes <- probe{ep, resp, err}
		}()
	}
	var firstErr error
	ok := false
	for range e.eps {
		p := <-probes
		p.ep.setHealth(p.err)
		if p.err == nil {
			ok = true
			e.publish(checkpoint{at: sent, rev: p.resp.Header.Revision})
			break
		}
		if firstErr == nil {
			firstErr = fmt.Errorf("%s: %w", p.ep.addr, p.err)
		}
	}
	pcancel()
	if !ok {
		e.Close()
		return nil, fmt.Errorf("store: etcd %s: %w; check the endpoints and that etcd is running", strings.Join(endpoints, ","), firstErr)
	}
	e.wg.Add(1 + len(e.eps))
	for _, ep := range e.eps {
		go e.healthLoop(ep)
	}
	go e.sweepLoop()
	return e, nil
}

// Prefix returns the key prefix in use.
func (e *Store) Prefix() string { return e.opts.Prefix }

// Close releases the connection; open watch channels close.
func (e *Store) Close() error {
	var err error
	e.closed.Do(func() {
		e.cancel()
		e.wg.Wait()
		for _, ep := range e.eps {
			if cerr := ep.cli.Close(); err == nil {
				err = cerr
			}
		}
	})
	return err
}

// segment escapes a bucket name into one path segment of the key layout.
func segment(bucket string) string {
	s := url.PathEscape(bucket)
	if strings.HasPrefix(s, ".") {
		s = "%2E" + s[1:]
	}
	return s
}

func (e *Store) bucketPrefix(bucket string) string {
	return e.opts.Prefix + "/" + segment(bucket) + "/"
}
func (e *Store) seqKey(bucket string) string { return e.opts.Prefix + "/.seq/" + segment(bucket) }
func (e *Store) delKey(bucket string) string { return e.opts.Prefix + "/.del/" + segment(bucket) }

// View implements Store: fn reads one snapshot.
func (e *Store) View(fn func(store.Reader) error) error {
	for attempt := 1; ; attempt++ {
		tx := &etcdTx{e: e}
		err := fn(tx)
		if tx.restart && attempt < e.opts.MaxAttempts {
			continue
		}
		return err
	}
}

// Update implements Store. See the type's doc for the isolation it gives.
func (e *Store) Update(fn func(store.Tx) error) error {
	marker := e.newMarker()
	lost := false // a try's answer was lost: a failed commit checks the marker
	for attempt := 1; ; attempt++ {
		tx := &etcdTx{e: e, writable: true}
		err := fn(tx)
		if tx.restart && attempt < e.opts.MaxAttempts {
			continue
		}
		if err != nil {
			return err
		}
		if tx.readFailed != nil {
			// fn went on without what it failed to read; committing could
			// overwrite a change it never saw.
			return fmt.Errorf("store: etcd: update not applied, one of its reads failed: %w", tx.readFailed)
		}
		ok, err := tx.commit(marker, attempt, &lost)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		e.conflicts.Add(1)
		if attempt >= e.opts.MaxAttempts {
			return fmt.Errorf("store: etcd: %w: gave up after %d attempts, other writers kept changing what this update read; retry later", store.ErrConflict, attempt)
		}
		if attempt > 4 {
			// Spread out the racers so that one of them gets through.
			time.Sleep(time.Duration(rand.IntN(1+min(attempt, 50))) * time.Millisecond)
		}
	}
}

// etcdTx is one attempt of a View or Update.
type etcdTx struct {
	e        *Store
	writable bool
	rev      int64 // snapshot revision; 0 until the first read
	restart  bool  // the snapshot was compacted away: run fn again
	// readFailed is the first failed read: such an update is never committed,
	// even if fn ignored the error.
	readFailed error
	reads      map[string]readRecord
	ranges     []readRange
	writes     map[string]*pendingWrite
}

type readRecord struct {
	bucket string // "" for meta keys
	modRev int64  // 0: absent
	value  []byte
	found  bool
}

type readRange struct {
	bucket     string
	start, end string
}

type pendingWrite struct {
	value   []byte
	deleted bool
}

func (t *etcdTx) checkBucket(op, bucket string) error {
	if bucket == "" {
		return fmt.Errorf("store: %s: empty bucket name", op)
	}
	return nil
}

// get reads one key from the snapshot, recording it for the commit check.
func (t *etcdTx) get(bucket, key string) ([]byte, bool, error) {
	return t.read(bucket, key, false)
}

// read is get; latest reads the key's current value rather than the
// snapshot's (NextSequence). Either way the commit requires the key to be
// unchanged since it was read, so the update stays serializable: as if it
// ran at its commit.
func (t *etcdTx) read(bucket, key string, latest bool) ([]byte, bool, error) {
	if w, ok := t.writes[key]; ok {
		if w.deleted {
			return nil, false, nil
		}
		return w.value, true, nil
	}
	if r, ok := t.reads[key]; ok {
		return r.value, r.found, nil
	}
	var opts []clientv3.OpOption
	if t.rev > 0 && !latest {
		opts = append(opts, clientv3.WithRev(t.rev))
	}
	var resp *clientv3.GetResponse
	err := t.e.call(func(ctx context.Context, cli *clientv3.Client) (err error) {
		resp, err = cli.Get(ctx, key, opts...)
		return err
	})
	if err != nil {
		return nil, false, t.readErr(err)
	}
	if t.rev == 0 && !latest {
		t.rev = resp.Header.Revision
	}
	rec := readOf(bucket, resp.Kvs)
	if t.reads == nil {
		t.reads = make(map[string]readRecord)
	}
	t.reads[key] = rec
	return rec.value, rec.found, nil
}

// GetMany implements store.MultiGetter: the keys it has not read or
// written yet come from one read-only etcd transaction (MaxTxnOps keys per
// request) at the snapshot's revision, and are recorded for the commit
// check like Get's.
func (t *etcdTx) GetMany(keys []store.BucketKey) ([][]byte, error) {
	full := make([]string, len(keys))
	var missing []int
	asked := map[string]bool{}
	for i, k := range keys {
		if err := t.checkBucket("get", k.Bucket); err != nil {
			return nil, err
		}
		full[i] = t.e.bucketPrefix(k.Bucket) + k.Key
		_, written := t.writes[full[i]]
		_, read := t.reads[full[i]]
		if !written && !read && !asked[full[i]] {
			asked[full[i]] = true
			missing = append(missing, i)
		}
	}
	for chunk := range slices.Chunk(missing, t.e.opts.MaxTxnOps) {
		if err := t.fetch(keys, full, chunk); err != nil {
			return nil, err
		}
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		v, found, err := t.get(k.Bucket, full[i])
		if err != nil {
			return nil, err
		}
		if found {
			out[i] = append([]byte{}, v...)
		}
	}
	return out, nil
}

// fetch reads the keys full[idx...] in one transaction into t.reads.
func (t *etcdTx) fetch(keys []store.BucketKey, full []string, idx []int) error {
	var opts []clientv3.OpOption
	if t.rev > 0 {
		opts = append(opts, clientv3.WithRev(t.rev))
	}
	ops := make([]clientv3.Op, len(idx))
	for j, i := range idx {
		ops[j] = clientv3.OpGet(full[i], opts...)
	}
	var resp *clientv3.TxnResponse
	err := t.e.call(func(ctx context.Context, cli *clientv3.Client) (err error) {
		resp, err = cli.Txn(ctx).Then(ops...).Commit()
		return err
	})
	if err != nil {
		return t.readErr(err)
	}
	if t.rev == 0 {
		// A read-only transaction reads at the revision its header names.
		t.rev = resp.Header.Revision
	}
	if t.reads == nil {
		t.reads = make(map[string]readRecord)
	}
	for j, i := range idx {
		t.reads[full[i]] = readOf(keys[i].Bucket, resp.Responses[j].GetResponseRange().GetKvs())
	}
	return nil
}

// readOf is the record of a one-key read that returned kvs.
func readOf(bucket string, kvs []*mvccpb.KeyValue) readRecord {
	rec := readRecord{bucket: bucket}
	if len(kvs) > 0 {
		rec.modRev, rec.value, rec.found = kvs[0].ModRevision, kvs[0].Value, true
	}
	return rec
}

func (t *etcdTx) readErr(err error) error {
	if errors.Is(err, rpctypes.ErrCompacted) {
		t.restart = true
	}
	err = fmt.Errorf("store: etcd read: %w", err)
	if t.readFailed == nil {
		t.readFailed = err
	}
	return err
}

func (t *etcdTx) Get(bucket, key string) ([]byte, error) {
	if err := t.checkBucket("get", bucket); err != nil {
		return nil, err
	}
	v, found, err := t.get(bucket, t.e.bucketPrefix(bucket)+key)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, store.ErrNotFound
	}
	return append([]byte{}, v...), nil
}

func (t *etcdTx) List(bucket, prefix string) ([]store.KV, error) {
	if err := t.checkBucket("list", bucket); err != nil {
		return nil, err
	}
	start := t.e.bucketPrefix(bucket) + prefix
	return t.rangeRead(bucket, start, clientv3.GetPrefixRangeEnd(start), 0)
}

func (t *etcdTx) ListAfter(bucket, after string, limit int) ([]store.KV, error) {
	if err := t.checkBucket("list", bucket); err != nil {
		return nil, err
	}
	bp := t.e.bucketPrefix(bucket)
	// The first key after "after" is after+"\x00": the range starts there.
	return t.rangeRead(bucket, bp+after+"\x00", clientv3.GetPrefixRangeEnd(bp), limit)
}

// rangeRead returns the bucket's entries in [start, end) as this
// transaction sees them (its own writes included), at most limit of them
// when limit > 0, and records the range it read for the commit's conflict
// check.
func (t *etcdTx) rangeRead(bucket, start, end string, limit int) ([]store.KV, error) {
	bp := t.e.bucketPrefix(bucket)
	pending := false
	for k := range t.writes {
		if k >= start && k < end {
			pending = true
			break
		}
	}
	opts := []clientv3.OpOption{clientv3.WithRange(end)}
	if limit > 0 && !pending {
		// Without writes of its own in the range, the server's first
		// limit keys are the answer.
		opts = append(opts, clientv3.WithLimit(int64(limit)))
	}
	if t.rev > 0 {
		opts = append(opts, clientv3.WithRev(t.rev))
	}
	var resp *clientv3.GetResponse
	err := t.e.call(func(ctx context.Context, cli *clientv3.Client) (err error) {
		resp, err = cli.Get(ctx, start, opts...)
		return err
	})
	if err != nil {
		return nil, t.readErr(err)
	}
	if t.rev == 0 {
		t.rev = resp.Header.Revision
	}
	readEnd := end
	if resp.More && len(resp.Kvs) > 0 {
		readEnd = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	t.ranges = append(t.ranges, readRange{bucket: bucket, start: start, end: readEnd})
	merged := make(map[string][]byte, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		merged[string(kv.Key)] = kv.Value
	}
	for k, w := range t.writes {
		if k < start || k >= end {
			continue
		}
		if w.deleted {
			delete(merged, k)
		} else {
			merged[k] = w.value
		}
	}
	var out []store.KV
	for k, v := range merged {
		out = append(out, store.KV{Key: strings.TrimPrefix(k, bp), Value: append([]byte{}, v...)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (t *etcdTx) write(key string, w *pendingWrite) {
	if t.writes == nil {
		t.writes = make(map[string]*pendingWrite)
	}
	t.writes[key] = w
}

func (t *etcdTx) Put(bucket, key string, value []byte) error {
	if !t.writable {
		return errors.New("store: put in a read-only transaction")
	}
	if err := t.checkBucket("put into "+bucket, bucket); err != nil {
		return err
	}
	if key == "" {
		return fmt.Errorf("store: put into %s: empty key", bucket)
	}
	t.write(t.e.bucketPrefix(bucket)+key, &pendingWrite{value: append([]byte{}, value...)})
	return nil
}

func (t *etcdTx) Delete(bucket, key string) error {
	if !t.writable {
		return errors.New("store: delete in a read-only transaction")
	}
	if err := t.checkBucket("delete", bucket); err != nil {
		return err
	}
	t.write(t.e.bucketPrefix(bucket)+key, &pendingWrite{deleted: true})
	// Lists of this bucket compare against this marker: a deleted key leaves
	// nothing in their range to compare.
	t.write(t.e.delKey(bucket), &pendingWrite{value: []byte("1")})
	return nil
}

func (t *etcdTx) NextSequence(bucket string) (uint64, error) {
	if !t.writable {
		return 0, errors.New("store: next sequence in a read-only transaction")
	}
	if err := t.checkBucket("next sequence", bucket); err != nil {
		return 0, err
	}
	key := t.e.seqKey(bucket)
	// A counter is what every writer of a log shares (the audit log): read
	// at the snapshot, it would make every update that appends to the log
	// conflict with every other one committed since the update's first
	// read. Read at its latest, it conflicts only with those committed
	// since this call, which callers make just before they return.
	v, found, err := t.read("", key, true)
	if err != nil {
		return 0, err
	}
	var n uint64
	if found {
		n, err = strconv.ParseUint(string(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("store: etcd key %s holds %q, not a sequence number; restore it from a backup", key, v)
		}
	}
	n++
	t.write(key, &pendingWrite{value: []byte(strconv.FormatUint(n, 10))})
	return n, nil
}

// commit applies the writes if nothing read changed since the snapshot. It
// reports false on a conflict.
//
// Every commit of one Update also creates the Update's marker key (value:
// the attempt) and requires it to be absent. So when a try's answer is lost
// (the member stopped or was cut off after it got the request, which may
// still apply), the same transaction is sent again to another member: it
// applies at most once, and when the resend fails, the marker tells
// whether it failed because the lost try applied. Only when no member
// answers within RequestTimeout is the outcome left unknown.
func (t *etcdTx) commit(marker string, attempt int, lost *bool) (bool, error) {
	if len(t.writes) == 0 {
		return true, nil
	}
	limit := t.e.opts.MaxTxnOps - 2 // the marker's compare and put
	if len(t.writes) > limit {
		return false, fmt.Errorf("store: etcd: one update writes %d keys, more than the cluster's limit of %d per transaction (--max-txn-ops, less 2 for the commit's marker); split the update", len(t.writes), limit)
	}
	cmps := t.compares(false)
	if len(cmps)+len(t.writes) > limit {
		cmps = t.compares(true)
		if len(cmps)+len(t.writes) > limit {
			return false, fmt.Errorf("store: etcd: one update needs %d comparisons and %d writes, more than the cluster's limit of %d per transaction (--max-txn-ops); split the update", len(cmps), len(t.writes), limit)
		}
	}
	keys := make([]string, 0, len(t.writes))
	for k := range t.writes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	ops := make([]clientv3.Op, 0, len(keys))
	for _, k := range keys {
		if w := t.writes[k]; w.deleted {
			ops = append(ops, clientv3.OpDelete(k))
		} else {
			ops = append(ops, clientv3.OpPut(k, string(w.value)))
		}
	}
	mark := strconv.Itoa(attempt)
	cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(marker), "=", 0))
	ops = append(ops, clientv3.OpPut(marker, mark))
	tries := 0
	var resp *clientv3.TxnResponse
	err := t.e.call(func(ctx context.Context, cli *clientv3.Client) (err error) {
		tries++
		resp, err = cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
		return err
	})
	if tries > 1 {
		t.e.ambiguous.Add(1)
		*lost = true
	}
	noSpace := err != nil && rpctypes.Error(err) == rpctypes.ErrNoSpace
	if err != nil && !noSpace {
		return false, fmt.Errorf("store: etcd commit (it may or may not have been applied; read the state before retrying): %w", err)
	}
	if !noSpace && (resp.Succeeded || !*lost) {
		return resp.Succeeded, nil
	}
	// "database space exceeded" does not say the transaction was not
	// applied: a member refuses a request before proposing it when its
	// backend is already over the quota, but one admitted below the quota
	// that the backend outgrew before it applied is applied and answered
	// with the same error (etcd's quota applier), raising the alarm. Only
	// the marker tells them apart, as it does after a lost answer.
	applied, merr := t.markerApplied(marker, mark)
	switch {
	case merr != nil:
		return false, merr
	case noSpace && applied:
		return true, nil
	case noSpace && *lost:
		// A try whose answer was lost may still apply later.
		return false, fmt.Errorf("store: etcd commit (it may or may not have been applied; read the state before retrying): %w", err)
	case noSpace:
		return false, fmt.Errorf("store: etcd: %w: the cluster refused the update (%v), which was not applied; its space quota (--quota-backend-bytes) is used up", store.ErrNoSpace, err)
	}
	return applied, nil // absent: a conflict
}

// markerApplied reports whether the try of this Update whose marker value
// is mark applied: the marker is absent when no try did (a conflict or a
// refusal), and holds another try's value when an earlier one applied.
func (t *etcdTx) markerApplied(marker, mark string) (bool, error) {
	var got *clientv3.GetResponse
	err := t.e.call(func(ctx context.Context, cli *clientv3.Client) (err error) {
		got, err = cli.Get(ctx, marker)
		return err
	})
	switch {
	case err != nil:
		return false, fmt.Errorf("store: etcd commit (it may or may not have been applied; read the state before retrying): %w", err)
	case len(got.Kvs) == 0:
		return false, nil
	case string(got.Kvs[0].Value) == mark:
		return true, nil
	}
	return false, fmt.Errorf("store: etcd commit: an earlier attempt (%s) of this update applied, not the last one; read the state before retrying", got.Kvs[0].Value)
}

// markerRetention is how long commit markers are kept: a try whose answer
// was lost and that still sits in a member's queue after this long could
// apply a second time. Requests are bounded by RequestTimeout, far less.
const markerRetention = 5 * time.Minute

// markerKey is the marker of an Update begun at t; markers sort by time.
func (e *Store) markerKey(t time.Time, suffix string) string {
	return fmt.Sprintf("%s/.txn/%020d%s", e.opts.Prefix, t.UnixNano(), suffix)
}

// newMarker returns a key no other Update (of any replica) uses.
func (e *Store) newMarker() string {
	return e.markerKey(time.Now(), fmt.Sprintf("-%s-%d", e.handle, e.markers.Add(1)))
}

// sweepLoop deletes the markers older than markerRetention, those of every
// replica, once a minute. Replicas that sweep at once delete the same range.
func (e *Store) sweepLoop() {
	defer e.wg.Done()
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-e.ctx.Done():
			return
		}
		start := e.opts.Prefix + "/.txn/"
		end := e.markerKey(time.Now().Add(-markerRetention), "")
		_ = e.call(func(ctx context.Context, cli *clientv3.Client) error {
			_, err := cli.Delete(ctx, start, clientv3.WithRange(end))
			return err
		})
	}
}

// compares builds the commit's conditions. Coarse mode replaces the per-key
// checks of bucket keys by one range check per bucket, which also fails on
// changes fn did not read but keeps the condition count small.
func (t *etcdTx) compares(coarse bool) []clientv3.Cmp {
	var cmps []clientv3.Cmp
	after := t.rev + 1
	guarded := map[string]bool{} // buckets whose deletion marker is checked
	guard := func(bucket string) {
		if !guarded[bucket] {
			guarded[bucket] = true
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(t.e.delKey(bucket)), "<", after))
		}
	}
	coarseBuckets := map[string]bool{}
	keys := make([]string, 0, len(t.reads))
	for k := range t.reads {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r := t.reads[k]
		if coarse && r.bucket != "" {
			coarseBuckets[r.bucket] = true
			continue
		}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", r.modRev))
	}
	buckets := make([]string, 0, len(coarseBuckets))
	for b := range coarseBuckets {
		buckets = append(buckets, b)
	}
	sort.Strings(buckets)
	for _, b := range buckets {
		p := t.e.bucketPrefix(b)
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(p), "<", after).WithRange(clientv3.GetPrefixRangeEnd(p)))
		guard(b)
	}
	for _, r := range t.ranges {
		if coarseBuckets[r.bucket] {
			continue // the whole bucket is checked already
		}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(r.start), "<", after).WithRange(r.end))
		guard(r.bucket)
	}
	return cmps
}

// ParseURL parses "etcd://host:2379,host2:2379[/prefix]" into endpoints
// ("host:port"; the port defaults to 2379) and a key prefix (default
// "/wharf"; no trailing slash).
func ParseURL(s string) (endpoints []string, prefix string, err error) {
	const scheme = "etcd://"
	bad := func(format string, args ...any) ([]string, string, error) {
		return nil, "", fmt.Errorf("store: etcd URL %q: %s; the form is etcd://host:2379,host2:2379/prefix", s, fmt.Sprintf(format, args...))
	}
	if !strings.HasPrefix(strings.ToLower(s), scheme) {
		return bad("it must start with %s", scheme)
	}
	rest := s[len(scheme):]
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		return bad("query and fragment are not supported")
	}
	hosts, path, _ := strings.Cut(rest, "/")
	if hosts == "" {
		return bad("no host")
	}
	for _, h := range strings.Split(hosts, ",") {
		ep, err := parseEndpoint(h)
		if err != nil {
			return bad("host %q: %v", h, err)
		}
		endpoints = append(endpoints, ep)
	}
	path = strings.TrimRight(path, "/")
	if path == "" {
		return endpoints, defaultEtcdPrefix, nil
	}
	for _, seg := range strings.Split(path, "/") {
		switch seg {
		case "":
			return bad("empty segment in prefix %q", "/"+path)
		case ".", "..":
			return bad("prefix %q has a %q segment", "/"+path, seg)
		}
	}
	for _, r := range path {
		if r < 0x20 || r == 0x7f || r == '%' || r == '\\' {
			return bad("prefix %q has a control character, %% or backslash", "/"+path)
		}
	}
	return endpoints, "/" + path, nil
}

func parseEndpoint(h string) (string, error) {
	if h == "" {
		return "", errors.New("empty")
	}
	if strings.ContainsAny(h, "@ \t\r\n") {
		return "", errors.New("user info and spaces are not allowed")
	}
	host, port := h, "2379"
	if strings.HasPrefix(h, "[") { // [v6]:port or [v6]
		end := strings.Index(h, "]")
		if end < 0 {
			return "", errors.New("unclosed [")
		}
		host = h[1:end]
		switch tail := h[end+1:]; {
		case tail == "":
		case strings.HasPrefix(tail, ":"):
			port = tail[1:]
		default:
			return "", errors.New("unexpected text after ]")
		}
		if host == "" || !strings.Contains(host, ":") {
			return "", errors.New("brackets are for IPv6 addresses")
		}
		if err := checkPort(port); err != nil {
			return "", err
		}
		return "[" + host + "]:" + port, nil
	}
	if i := strings.LastIndex(h, ":"); i >= 0 {
		host, port = h[:i], h[i+1:]
		if strings.Contains(host, ":") {
			return "", errors.New("an IPv6 address needs brackets: [::1]:2379")
		}
	}
	if host == "" {
		return "", errors.New("empty host name")
	}
	for _, r := range host {
		if !(r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return "", fmt.Errorf("invalid character %q in host name", r)
		}
	}
	if err := checkPort(port); err != nil {
		return "", err
	}
	return host + ":" + port, nil
}

func checkPort(p string) error {
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != p {
		return fmt.Errorf("port %q is not a number between 1 and 65535", p)
	}
	return nil
}
