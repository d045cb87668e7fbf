package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/store/storetest"
	"github.com/wharfhq/wharf/internal/server/etcdstore"
	"github.com/wharfhq/wharf/internal/testutil/etcdtest"
)

func openEtcd(t *testing.T, endpoints []string, opts etcdstore.Options) *etcdstore.Store {
	t.Helper()
	e, err := etcdstore.Open(endpoints, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// prefixes hands out a fresh key prefix per store, so the tests of one
// cluster start from empty state.
type prefixes struct{ n atomic.Int64 }

func (p *prefixes) next() string { return fmt.Sprintf("/wharf-test/%d", p.n.Add(1)) }

// TestEtcdContract runs the backend contract against a single-member
// embedded etcdstore.
func TestEtcdContract(t *testing.T) {
	c := etcdtest.Start(t, 1)
	var p prefixes
	storetest.Run(t, func(t *testing.T) store.Store {
		return openEtcd(t, c.Endpoints(), etcdstore.Options{Prefix: p.next()})
	})
}

// TestEtcdReplicasContract races separate clients, as separate wharf
// servers sharing one etcd would.
func TestEtcdReplicasContract(t *testing.T) {
	c := etcdtest.Start(t, 1)
	var p prefixes
	storetest.RunReplicas(t, func(t *testing.T) storetest.Shared {
		prefix := p.next()
		return func(t *testing.T) store.Store {
			return openEtcd(t, c.Endpoints(), etcdstore.Options{Prefix: prefix})
		}
	})
}

// readFiller reads more keys than a transaction may compare one by one
// (MaxTxnOps below), so the update falls back to per-bucket checks.
func readFiller(tx store.Tx) error {
	for i := range 8 {
		if _, err := tx.Get("fill", strconv.Itoa(i)); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return nil
}

const coarseMaxTxnOps = 8 // 6, plus the commit marker's compare and put

// TestEtcdCoarseComparesCounter: clients whose updates read too many keys
// to check one by one still lose no increment.
func TestEtcdCoarseComparesCounter(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const clients, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		s := openEtcd(t, c.Endpoints(), etcdstore.Options{Prefix: "/p", MaxTxnOps: coarseMaxTxnOps})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				err := s.Update(func(tx store.Tx) error {
					if err := readFiller(tx); err != nil {
						return err
					}
					n := 0
					if v, err := tx.Get("fill", "counter"); err == nil {
						n, _ = strconv.Atoi(string(v))
					} else if !errors.Is(err, store.ErrNotFound) {
						return err
					}
					return tx.Put("fill", "counter", []byte(strconv.Itoa(n+1)))
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s := openEtcd(t, c.Endpoints(), etcdstore.Options{Prefix: "/p"})
	var v []byte
	if err := s.View(func(r store.Reader) error {
		var err error
		v, err = r.Get("fill", "counter")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if string(v) != strconv.Itoa(clients*each) {
		t.Fatalf("counter = %s, want %d", v, clients*each)
	}
}

func TestEtcdKeyLayout(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := openEtcd(t, c.Endpoints(), etcdstore.Options{Prefix: "/corp/wharf/"})
	if s.Prefix() != "/corp/wharf" {
		t.Fatalf("Prefix() = %q, want /corp/wharf", s.Prefix())
	}
	err := s.Update(func(tx store.Tx) error {
		if err := tx.Put("marketplaces", "corp", []byte("m")); err != nil {
			return err
		}
		if err := tx.Put("a/b", "c/d", []byte("x")); err != nil {
			return err
		}
		if _, err := tx.NextSequence("audit"); err != nil {
			return err
		}
		return tx.Delete("marketplaces", "old")
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Client().Get(context.Background(), "/corp/wharf/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	markers := 0
	markerRE := regexp.MustCompile(`^/corp/wharf/\.txn/[0-9]{20}-[0-9a-z]{8}-[0-9]+$`)
	for _, kv := range resp.Kvs {
		if markerRE.Match(kv.Key) && string(kv.Value) == "1" {
			markers++ // the commit's marker: applied on attempt 1
			continue
		}
		got[string(kv.Key)] = string(kv.Value)
	}
	if markers != 1 {
		t.Errorf("%d commit markers, want 1", markers)
	}
	want := map[string]string{
		"/corp/wharf/marketplaces/corp": "m",
		"/corp/wharf/a%2Fb/c/d":         "x",
		"/corp/wharf/.seq/audit":        "1",
		"/corp/wharf/.del/marketplaces": "1",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("keys in etcd:\n%v\nwant\n%v", got, want)
	}
}

// conflictCase runs fn in an Update; on the first attempt, after fn has
// read, interfere changes the store through another client. It returns how
// many times fn ran.
func runWithInterference(t *testing.T, s, other store.Store, fn func(tx store.Tx) error, interfere func(store.Store) error) int {
	t.Helper()
	attempts := 0
	err := s.Update(func(tx store.Tx) error {
		attempts++
		if err := fn(tx); err != nil {
			return err
		}
		if attempts == 1 {
			if err := interfere(other); err != nil {
				return err
			}
		}
		return tx.Put("out", "done", []byte(strconv.Itoa(attempts)))
	})
	if err != nil {
		t.Fatal(err)
	}
	return attempts
}

// TestEtcdConflictDetection pins down what a concurrent change must (and
// must not) make an Update run again.
func TestEtcdConflictDetection(t *testing.T) {
	c := etcdtest.Start(t, 1)
	var p prefixes
	put := func(bucket, key, value string) func(store.Store) error {
		return func(s store.Store) error {
			return s.Update(func(tx store.Tx) error { return tx.Put(bucket, key, []byte(value)) })
		}
	}
	del := func(bucket, key string) func(store.Store) error {
		return func(s store.Store) error {
			return s.Update(func(tx store.Tx) error { return tx.Delete(bucket, key) })
		}
	}
	getK := func(bucket, key string) func(tx store.Tx) error {
		return func(tx store.Tx) error {
			_, err := tx.Get(bucket, key)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			return err
		}
	}
	listP := func(bucket, prefix string) func(tx store.Tx) error {
		return func(tx store.Tx) error { _, err := tx.List(bucket, prefix); return err }
	}
	listAfter := func(bucket, after string, limit int) func(tx store.Tx) error {
		return func(tx store.Tx) error { _, err := tx.ListAfter(bucket, after, limit); return err }
	}
	// want: runs of fn with per-key checks; coarse: with per-bucket checks,
	// which also rerun on a change in the bucket that fn did not read.
	cases := []struct {
		name         string
		read         func(tx store.Tx) error
		interfere    func(store.Store) error
		want, coarse int
	}{
		{"changed key read", getK("b", "k"), put("b", "k", "2"), 2, 2},
		{"created key read as missing", getK("b", "new"), put("b", "new", "x"), 2, 2},
		{"deleted key read", getK("b", "k"), del("b", "k"), 2, 2},
		{"other key changed", getK("b", "k"), put("b", "k2", "x"), 1, 2},
		{"key in another bucket changed", getK("b", "k"), put("b2", "k", "x"), 1, 1},
		{"key inserted into listed range", listP("b", "k"), put("b", "k9", "x"), 2, 2},
		{"key changed in listed range", listP("b", "k"), put("b", "k", "3"), 2, 2},
		{"key deleted from listed range", listP("b", "k"), del("b", "k"), 2, 2},
		{"key inserted outside listed range", listP("b", "k"), put("b", "z", "x"), 1, 1},
		{"key inserted in another bucket", listP("b", ""), put("b2", "k", "x"), 1, 1},
		{"key inserted into a page read", listAfter("b", "", 1), put("b", "a", "x"), 2, 2},
		{"key inserted after the last page", listAfter("b", "", 5), put("b", "z", "x"), 2, 2},
		{"key changed in a page read", listAfter("b", "", 1), put("b", "k", "3"), 2, 2},
		{"key inserted before a page", listAfter("b", "k", 5), put("b", "a", "x"), 1, 1},
		{"sequence taken by another", func(tx store.Tx) error { _, err := tx.NextSequence("audit"); return err }, func(s store.Store) error {
			return s.Update(func(tx store.Tx) error { _, err := tx.NextSequence("audit"); return err })
		}, 2, 2},
	}
	for _, coarse := range []bool{false, true} {
		for _, tc := range cases {
			name, want, opts := tc.name, tc.want, etcdstore.Options{}
			read := tc.read
			if coarse {
				name, want, opts.MaxTxnOps = "coarse/"+name, tc.coarse, coarseMaxTxnOps
				read = func(tx store.Tx) error {
					if err := readFiller(tx); err != nil {
						return err
					}
					return tc.read(tx)
				}
			}
			t.Run(name, func(t *testing.T) {
				opts.Prefix = p.next()
				s := openEtcd(t, c.Endpoints(), opts)
				other := openEtcd(t, c.Endpoints(), etcdstore.Options{Prefix: opts.Prefix})
				if err := put("b", "k", "1")(s); err != nil {
					t.Fatal(err)
				}
				if got := runWithInterference(t, s, other, read, tc.interfere); got != want {
					t.Fatalf("fn ran %d times, want %d", got, want)
				}
			})
		}
	}
}

func TestEtcdGivesUpAfterMaxAttempts(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := openEtcd(t, c.Endpoints(), etcdstore.Options{Prefix: "/p", MaxAttempts: 3})
	other := openEtcd(t, c.Endpoints(), etcdstore.Options{Prefix: "/p"})
	attempts := 0
	err := s.Update(func(tx store.Tx) error {
		attempts++
		v, err := tx.Get("b", "k")
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		// Someone else always gets there first.
		if err := other.Update(func(tx store.Tx) error { return tx.Put("b", "k", []byte(strconv.Itoa(attempts))) }); err != nil {
			return err
		}
		return tx.Put("b", "k", append(v, 'x'))
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	if attempts != 3 {
		t.Fatalf("fn ran %d times, want 3 (MaxAttempts)", attempts)
	}
	if !strings.Contains(err.Error(), "3 attempts") {
		t.Fatalf("error %q does not say how often it tried", err)
	}
}

func TestEtcdTooManyWritesInOneUpdate(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := openEtcd(t, c.Endpoints(), etcdstore.Options{Prefix: "/p", MaxTxnOps: 10})
	err := s.Update(func(tx store.Tx) error {
		for i := range 11 {
			if err := tx.Put("b", strconv.Itoa(i), []byte("x")); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "writes 11 keys") || !strings.Contains(err.Error(), "--max-txn-ops") {
		t.Fatalf("err = %v, want one naming the 11 writes and --max-txn-ops", err)
	}
	var n int
	if err := s.View(func(r store.Reader) error {
		kvs, err := r.List("b", "")
		n = len(kvs)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d keys written by a refused update", n)
	}
}

func TestEtcdReadOnlyView(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := openEtcd(t, c.Endpoints(), etcdstore.Options{Prefix: "/p"})
	err := s.View(func(r store.Reader) error {
		tx, ok := r.(store.Tx)
		if !ok {
			return nil
		}
		return tx.Put("b", "k", []byte("x"))
	})
	if err == nil {
		t.Fatal("a write through View succeeded")
	}
}

func TestEtcdWatchClosesWithStore(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s, err := etcdstore.Open(c.Endpoints(), etcdstore.Options{Prefix: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := s.Watch(context.Background(), "tokens")
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	deadline := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case ev, ok := <-ch:
			if ok && !ev.Progress {
				t.Fatalf("event %+v after Close", ev)
			}
			done = !ok
		case <-deadline:
			t.Fatal("watch channel still open 10s after Close")
		}
	}
	if _, err := s.Watch(context.Background(), "tokens"); err == nil {
		t.Fatal("Watch on a closed store succeeded")
	}
}

func TestOpenEtcdUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	_, err = etcdstore.Open([]string{addr}, etcdstore.Options{DialTimeout: 500 * time.Millisecond})
	if err == nil {
		t.Fatal("etcdstore.Open of a closed port succeeded")
	}
	if !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "etcd is running") {
		t.Fatalf("error %q does not name the address and the next step", err)
	}
	if _, err := etcdstore.Open(nil, etcdstore.Options{}); err == nil {
		t.Fatal("etcdstore.Open without endpoints succeeded")
	}
	if _, err := etcdstore.Open([]string{addr}, etcdstore.Options{Prefix: "/"}); err == nil || !strings.Contains(err.Error(), "prefix") {
		t.Fatalf("etcdstore.Open with prefix / = %v, want a prefix error", err)
	}
}

// TestEtcdMemberProcess hosts one etcd member in a child process for
// etcdtest.StartProcesses; run directly, it skips.
func TestEtcdMemberProcess(t *testing.T) { etcdtest.ServeMember(t) }

// TestEtcdClusterSurvivesLeaderCrash writes through a client on all three
// members of a cluster (each its own process), kills the leader with SIGKILL
// in the middle of the load, keeps writing, and then reads every
// acknowledged write back through the two members left. The audit log's
// sequence numbers stay gap-free and no update is half applied.
func TestEtcdClusterSurvivesLeaderCrash(t *testing.T) {
	c := etcdtest.StartProcesses(t, 3, "TestEtcdMemberProcess")
	s := openEtcd(t, c.Endpoints(), etcdstore.Options{Prefix: "/ha", RequestTimeout: 5 * time.Second})

	const workers, before, after = 4, 25, 25
	const maxErrors = 200 // per worker: a client that never recovers fails the test
	type ack struct {
		key, value string
		seq        uint64
	}
	var (
		wg       sync.WaitGroup
		acks     = make([][]ack, workers)
		failures = make([]int, workers)
		reached  = make(chan struct{}, workers)
		killed   = make(chan struct{})
	)
	// A watcher on the same client must see every write, across the crash.
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	watch, err := s.Watch(wctx, "data")
	if err != nil {
		t.Fatal(err)
	}
	var (
		seenMu sync.Mutex
		seen   = map[string]string{}
		seenCh = make(chan struct{}, 1)
	)
	go func() {
		for ev := range watch {
			if ev.Progress {
				continue
			}
			seenMu.Lock()
			seen[ev.Key] = string(ev.Value)
			seenMu.Unlock()
			select {
			case seenCh <- struct{}{}:
			default:
			}
		}
	}()

	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			signaled, afterKill := false, 0
			for i := 0; afterKill < after; i++ {
				if !signaled && len(acks[w]) >= before {
					signaled = true
					reached <- struct{}{}
				}
				if len(acks[w]) >= 20*before {
					<-killed // bound the load if the kill is slow to come
				}
				key, value := fmt.Sprintf("w%d-%04d", w, i), fmt.Sprintf("value %d/%d", w, i)
				var seq uint64
				err := s.Update(func(tx store.Tx) error {
					var err error
					if seq, err = tx.NextSequence("audit"); err != nil {
						return err
					}
					if err := tx.Put("audit", fmt.Sprintf("%020d", seq), []byte(key)); err != nil {
						return err
					}
					return tx.Put("data", key, []byte(value))
				})
				if err != nil {
					// Not acknowledged: it may or may not have been applied.
					if failures[w] == 0 {
						t.Logf("worker %d: first failed write: %v", w, err)
					}
					if failures[w]++; failures[w] > maxErrors {
						errs <- fmt.Errorf("worker %d: %d failed writes, last: %w", w, failures[w], err)
						return
					}
					time.Sleep(20 * time.Millisecond)
					continue
				}
				acks[w] = append(acks[w], ack{key, value, seq})
				select {
				case <-killed:
					afterKill++
				default:
				}
			}
		}()
	}
	for range workers {
		select {
		case <-reached:
		case err := <-errs:
			close(killed)
			wg.Wait()
			t.Fatal(err)
		}
	}
	// Kill the leader while the workers keep writing: some updates are in
	// flight when it dies.
	leader := c.Leader()
	c.Stop(leader)
	close(killed)
	t.Logf("killed leader %s (%s) with %d writers running", c.Members[leader].Name, c.Members[leader].ClientURL, workers)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("failed (unacknowledged) writes per worker: %v", failures)

	// Read back through a fresh client on the surviving members only.
	c.WaitHealthy()
	r := openEtcd(t, c.Endpoints(), etcdstore.Options{Prefix: "/ha"})
	var data, audit []store.KV
	if err := r.View(func(rd store.Reader) error {
		var err error
		if data, err = rd.List("data", ""); err != nil {
			return err
		}
		audit, err = rd.List("audit", "")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	stored := map[string]string{}
	for _, kv := range data {
		stored[kv.Key] = string(kv.Value)
	}
	bySeq := map[uint64]string{}
	for i, kv := range audit {
		n, err := strconv.ParseUint(kv.Key, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if n != uint64(i+1) {
			t.Fatalf("audit log has a gap: entry %d has sequence %d", i, n)
		}
		bySeq[n] = string(kv.Value)
	}
	total := 0
	for w := range workers {
		for _, a := range acks[w] {
			total++
			if got, ok := stored[a.key]; !ok || got != a.value {
				t.Errorf("acknowledged write %s = %q, %v after the member loss", a.key, got, ok)
			}
			if bySeq[a.seq] != a.key {
				t.Errorf("audit entry %d = %q, want %q", a.seq, bySeq[a.seq], a.key)
			}
		}
	}
	if total < workers*(before+after) {
		t.Fatalf("%d acknowledged writes, want at least %d", total, workers*(before+after))
	}
	// Every stored entry is explained by the log, acknowledged or not.
	if len(audit) != len(data) {
		t.Fatalf("%d audit entries but %d data keys: an update was half applied", len(audit), len(data))
	}
	t.Logf("%d acknowledged of %d stored writes", total, len(audit))

	missing := func() []string {
		seenMu.Lock()
		defer seenMu.Unlock()
		var out []string
		for w := range workers {
			for _, a := range acks[w] {
				if seen[a.key] != a.value {
					out = append(out, a.key)
				}
			}
		}
		return out
	}
	deadline := time.After(30 * time.Second)
	for m := missing(); len(m) > 0; m = missing() {
		select {
		case <-seenCh:
		case <-deadline:
			t.Fatalf("the watch missed %d acknowledged writes, e.g. %s", len(m), m[0])
		}
	}
}

func TestParseEtcdURL(t *testing.T) {
	good := []struct {
		in     string
		eps    []string
		prefix string
	}{
		{"etcd://127.0.0.1:2379", []string{"127.0.0.1:2379"}, "/wharf"},
		{"etcd://a:2379,b:2380/corp/wharf", []string{"a:2379", "b:2380"}, "/corp/wharf"},
		{"etcd://etcd-0.etcd/wharf/", []string{"etcd-0.etcd:2379"}, "/wharf"},
		{"ETCD://h:1/", []string{"h:1"}, "/wharf"},
		{"etcd://[::1]:2379,[fe80::1]/x", []string{"[::1]:2379", "[fe80::1]:2379"}, "/x"},
	}
	for _, tc := range good {
		eps, prefix, err := etcdstore.ParseURL(tc.in)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tc.in, err)
			continue
		}
		if !slices.Equal(eps, tc.eps) || prefix != tc.prefix {
			t.Errorf("ParseURL(%q) = %q, %q; want %q, %q", tc.in, eps, prefix, tc.eps, tc.prefix)
		}
	}
	bad := []struct{ in, mention string }{
		{"http://h:2379", "must start with etcd://"},
		{"etcd://", "no host"},
		{"etcd:///prefix", "no host"},
		{"etcd://h:2379,,h2", `host ""`},
		{"etcd://h:0", "port"},
		{"etcd://h:65536", "port"},
		{"etcd://h:02379", "port"},
		{"etcd://h:x", "port"},
		{"etcd://user:pw@h:2379", "user info"},
		{"etcd://::1:2379", "brackets"},
		{"etcd://[::1", "unclosed"},
		{"etcd://[::1]x", "after ]"},
		{"etcd://[h]:1", "IPv6"},
		{"etcd://h:1/a//b", "empty segment"},
		{"etcd://h:1/a/../b", `".."`},
		{"etcd://h:1/a?x=1", "query"},
		{"etcd://h:1/a%2Fb", "%"},
		{"etcd://h:1/a\x01", "control"},
		{"etcd://h_é:1", "invalid character"},
	}
	for _, tc := range bad {
		_, _, err := etcdstore.ParseURL(tc.in)
		if err == nil {
			t.Errorf("ParseURL(%q) succeeded", tc.in)
			continue
		}
		if !strings.Contains(err.Error(), tc.mention) || !strings.Contains(err.Error(), "etcd://host:2379") {
			t.Errorf("ParseURL(%q) = %q; want it to mention %q and the form", tc.in, err, tc.mention)
		}
	}
}

func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"etcd://127.0.0.1:2379", "etcd://a:1,b:2/p/q", "etcd://[::1]:2379/x", "etcd://h/",
		"etcd://", "etcd://h:99999", "etcd://[", "etcd://h:1/a//b", "etcd://h:1/..",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		eps, prefix, err := etcdstore.ParseURL(s)
		if err != nil {
			return
		}
		if len(eps) == 0 {
			t.Fatalf("%q: no endpoints and no error", s)
		}
		for _, ep := range eps {
			host, port, err := net.SplitHostPort(ep)
			if err != nil || host == "" || port == "" {
				t.Fatalf("%q: endpoint %q does not split into host and port: %v", s, ep, err)
			}
		}
		if !strings.HasPrefix(prefix, "/") || strings.HasSuffix(prefix, "/") || strings.Contains(prefix, "//") {
			t.Fatalf("%q: prefix %q is not /a/b form", s, prefix)
		}
		// The canonical form parses to the same result.
		again := "etcd://" + strings.Join(eps, ",") + prefix
		eps2, prefix2, err := etcdstore.ParseURL(again)
		if err != nil || !slices.Equal(eps, eps2) || prefix != prefix2 {
			t.Fatalf("%q: canonical %q parses to %q %q %v", s, again, eps2, prefix2, err)
		}
	})
}

// TestEtcdWatchResumesAfterQuorumLoss: a watcher connected to one member
// keeps delivering, in order and without a gap, after that member lost its
// leader (the other two were killed) and the cluster came back.
func TestEtcdWatchResumesAfterQuorumLoss(t *testing.T) {
	c := etcdtest.StartProcesses(t, 3, "TestEtcdMemberProcess")
	leader := c.Leader()
	follower := (leader + 1) % 3
	other := (leader + 2) % 3
	watcher := openEtcd(t, []string{c.Members[follower].Endpoint()}, etcdstore.Options{Prefix: "/w"})
	writer := openEtcd(t, c.Endpoints(), etcdstore.Options{Prefix: "/w"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := watcher.Watch(ctx, "tokens")
	if err != nil {
		t.Fatal(err)
	}
	expect := func(key string) {
		t.Helper()
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("watch channel closed while waiting for %s", key)
			}
			for ev.Progress {
				if ev, ok = <-ch; !ok {
					t.Fatalf("watch channel closed while waiting for %s", key)
				}
			}
			if ev.Key != key {
				t.Fatalf("event for %s, want %s", ev.Key, key)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("no event for %s within 60s", key)
		}
	}
	put := func(key string) {
		t.Helper()
		if err := writer.Update(func(tx store.Tx) error { return tx.Put("tokens", key, []byte("revoked")) }); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	put("a")
	expect("a")

	c.Stop(leader)
	c.Stop(other)
	// The follower alone has no leader: etcd cancels the watches that
	// require one. Wait until a watch of our own is canceled so, then bring
	// one member back.
	raw, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Members[follower].Endpoint()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rctx, rcancel := context.WithTimeout(clientv3.WithRequireLeader(context.Background()), 60*time.Second)
	defer rcancel()
	for wr := range raw.Watch(rctx, "/w/", clientv3.WithPrefix()) {
		if err := wr.Err(); err != nil {
			t.Logf("without quorum: %v", err)
			break
		}
	}
	if rctx.Err() != nil {
		t.Fatal("etcd did not cancel a leader-requiring watch within 60s of losing quorum")
	}
	c.Restart(other)
	for _, k := range []string{"b", "c", "d"} {
		put(k)
	}
	for _, k := range []string{"b", "c", "d"} {
		expect(k)
	}
}

// TestEtcdSnapshotCompactedRunsAgain: when etcd compacts away the revision a
// transaction reads from, the transaction runs again on a new snapshot
// instead of failing or mixing two snapshots.
func TestEtcdSnapshotCompactedRunsAgain(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := openEtcd(t, c.Endpoints(), etcdstore.Options{Prefix: "/p"})
	if err := s.Update(func(tx store.Tx) error {
		if err := tx.Put("b", "x", []byte("1")); err != nil {
			return err
		}
		return tx.Put("b", "y", []byte("1"))
	}); err != nil {
		t.Fatal(err)
	}
	raw := c.Client()
	for _, useView := range []bool{false, true} {
		attempts := 0
		var x, y []byte
		fn := func(r store.Reader) error {
			attempts++
			var err error
			if x, err = r.Get("b", "x"); err != nil {
				return err
			}
			if attempts == 1 {
				// Move both keys on and compact the history this snapshot needs.
				resp, err := raw.Txn(context.Background()).Then(
					clientv3.OpPut("/p/b/x", "2"), clientv3.OpPut("/p/b/y", "2")).Commit()
				if err != nil {
					return err
				}
				if _, err := raw.Compact(context.Background(), resp.Header.Revision); err != nil {
					return err
				}
			}
			y, err = r.Get("b", "y")
			return err
		}
		var err error
		if useView {
			err = s.View(fn)
		} else {
			err = s.Update(func(tx store.Tx) error { return fn(tx) })
		}
		if err != nil {
			t.Fatalf("view=%v: %v", useView, err)
		}
		if attempts != 2 {
			t.Fatalf("view=%v: fn ran %d times, want 2", useView, attempts)
		}
		if string(x) != string(y) {
			t.Fatalf("view=%v: x=%s y=%s: two snapshots mixed", useView, x, y)
		}
	}
}

// TestEtcdUpdateWithFailedReadIsNotApplied: an fn that ignores a failed
// read must not commit writes made without what it could not read.
func TestEtcdUpdateWithFailedReadIsNotApplied(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := openEtcd(t, c.Endpoints(), etcdstore.Options{Prefix: "/p"})
	huge := strings.Repeat("k", 3<<20) // larger than etcd takes in one request
	err := s.Update(func(tx store.Tx) error {
		if _, err := tx.Get("b", huge); err == nil || errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("reading a 3 MiB key: %v, want a failed read", err)
		}
		return tx.Put("b", "small", []byte("x")) // carelessly goes on
	})
	if err == nil || !strings.Contains(err.Error(), "reads failed") {
		t.Fatalf("Update = %v, want it refused because a read failed", err)
	}
	if err := s.View(func(r store.Reader) error { _, err := r.Get("b", "small"); return err }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("b/small after the refused update: %v, want ErrNotFound", err)
	}
}

// TestEtcdSequenceConflictsOnlyAfterItsRead: an update that appends to a
// log takes the log's counter at its latest, so another append committed
// after the update's first read but before its NextSequence does not make
// it run again (the shared audit counter made every audited update of a
// busy server run again); one committed after its NextSequence does.
func TestEtcdSequenceConflictsOnlyAfterItsRead(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := openEtcd(t, c.Endpoints(), etcdstore.Options{Prefix: "/seq"})
	other := openEtcd(t, c.Endpoints(), etcdstore.Options{Prefix: "/seq"})
	appendOther := func() {
		if err := other.Update(func(tx store.Tx) error { _, err := tx.NextSequence("audit"); return err }); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name        string
		beforeSeq   bool // the other append comes before this update's NextSequence
		wantRuns    int
		wantSeqLast uint64
	}{
		{"other append before NextSequence", true, 1, 2},
		{"other append after NextSequence", false, 2, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := 0
			var seq uint64
			err := s.Update(func(tx store.Tx) error {
				runs++
				if _, err := tx.Get("data", "k"); err != nil && !errors.Is(err, store.ErrNotFound) {
					return err
				}
				if runs == 1 && tc.beforeSeq {
					appendOther()
				}
				var err error
				if seq, err = tx.NextSequence("audit"); err != nil {
					return err
				}
				if runs == 1 && !tc.beforeSeq {
					appendOther()
				}
				return tx.Put("data", "k", []byte("v"))
			})
			if err != nil {
				t.Fatal(err)
			}
			if runs != tc.wantRuns || seq != tc.wantSeqLast {
				t.Fatalf("fn ran %d times and took sequence %d, want %d runs and sequence %d", runs, seq, tc.wantRuns, tc.wantSeqLast)
			}
		})
	}
}
