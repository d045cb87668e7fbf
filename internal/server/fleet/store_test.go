package fleet_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/fleet"
	"github.com/wharfhq/wharf/internal/testutil/storeharness"
)

// The inventory's contract, on every backend: Open returns a fresh, empty
// store; Again returns another client of the same store (a replica).
func TestInventory(t *testing.T) {
	storeharness.Run(t, "inv", runContract)
}

func runContract(t *testing.T, b *storeharness.Backend) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *storeharness.Backend)
	}{
		{"ReplaceAndRead", testReplaceAndRead},
		{"UnchangedReportWritesNothing", testUnchangedNoWrite},
		{"ReplicaLearnsWithOneRead", testReplicaTouch},
		{"RevertThroughAnotherReplica", testRevertThroughReplicas},
		{"TokenOwnsItsMachine", testOwner},
		{"WhoHasReadsOnlyItsMachines", testWhoHas},
		{"WhoHasShowsClientKind", testClientKind},
		{"CountsFollowReports", testCounts},
		{"ConcurrentReportsKeepExactCounts", testConcurrentCounts},
		{"LargeReportInBatchesSurvivesInterruption", testBatches},
		{"StaleMachines", testStale},
		{"QuotaPerToken", testQuota},
		{"PluginsInPages", testPluginsPage},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, b) })
	}
}

// counting wraps a store and counts writes and keys read.
type counting struct {
	store.Store
	writes   atomic.Int64 // Put and Delete calls
	keysRead atomic.Int64 // keys returned by Get, List, ListAfter
	failAt   atomic.Int64 // the Update call number that fails (0: none)
	updates  atomic.Int64
}

var errInjected = errors.New("injected failure")

func (c *counting) View(fn func(store.Reader) error) error {
	return c.Store.View(func(r store.Reader) error { return fn(countReader{r, c}) })
}

func (c *counting) Update(fn func(store.Tx) error) error {
	if n := c.updates.Add(1); n == c.failAt.Load() {
		return errInjected
	}
	return c.Store.Update(func(tx store.Tx) error { return fn(&countTx{countReader{tx, c}, tx, c}) })
}

type countReader struct {
	r store.Reader
	c *counting
}

func (r countReader) Get(b, k string) ([]byte, error) {
	v, err := r.r.Get(b, k)
	if err == nil {
		r.c.keysRead.Add(1)
	}
	return v, err
}

func (r countReader) List(b, p string) ([]store.KV, error) {
	kvs, err := r.r.List(b, p)
	r.c.keysRead.Add(int64(len(kvs)))
	return kvs, err
}

func (r countReader) ListAfter(b, a string, n int) ([]store.KV, error) {
	kvs, err := r.r.ListAfter(b, a, n)
	r.c.keysRead.Add(int64(len(kvs)))
	return kvs, err
}

type countTx struct {
	countReader
	tx store.Tx
	c  *counting
}

func (t *countTx) Put(b, k string, v []byte) error { t.c.writes.Add(1); return t.tx.Put(b, k, v) }
func (t *countTx) Delete(b, k string) error        { t.c.writes.Add(1); return t.tx.Delete(b, k) }
func (t *countTx) NextSequence(b string) (uint64, error) {
	t.c.writes.Add(1)
	return t.tx.NextSequence(b)
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func machineID(n int) string { return fmt.Sprintf("m-%032x", n) }

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "w1:" + base64.StdEncoding.EncodeToString(sum[:])
}

func pl(id, version string) inventory.Plugin {
	return inventory.Plugin{ID: id, Version: version, Digest: digest(id + version), Scope: "user",
		Install: inventory.InstallUser, Enabled: true, State: inventory.StateActive}
}

func report(n int, plugins ...inventory.Plugin) inventory.Report {
	return inventory.Report{Machine: inventory.Machine{ID: machineID(n), Hostname: fmt.Sprintf("host%d", n), OS: "linux/amd64"},
		Client: inventory.Client{Kind: inventory.KindWharf, Version: "1.0.0"}, Plugins: plugins, Created: time.Now()}
}

func put(t *testing.T, inv *fleet.Store, token string, r inventory.Report) bool {
	t.Helper()
	changed, err := inv.Put(token, r)
	if err != nil {
		t.Fatalf("Put %s: %v", r.Machine.ID, err)
	}
	return changed
}

func machinesOf(hs []fleet.Holder) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Machine)
	}
	return out
}

func testReplaceAndRead(t *testing.T, b *storeharness.Backend) {
	inv := fleet.Open(b.Open(t), fleet.Options{})
	if !put(t, inv, "tok1", report(1, pl("a@corp", "1.0.0"), pl("b@corp", "2.0.0"))) {
		t.Fatal("the first report must change the inventory")
	}
	if !put(t, inv, "tok1", report(1, pl("a@corp", "1.1.0"))) {
		t.Fatal("a different report must change the inventory")
	}
	mi, err := inv.Machine(machineID(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(mi.Report.Plugins) != 1 || mi.Report.Plugins[0].Version != "1.1.0" || mi.Token != "tok1" || mi.Report.Machine.Hostname != "host1" {
		t.Fatalf("machine = %+v, want only a@corp 1.1.0 owned by tok1", mi)
	}
	hs, _, err := inv.Holders("b@corp", "", 10)
	if err != nil || len(hs) != 0 {
		t.Fatalf("b@corp was removed by the second report; holders = %v, %v", hs, err)
	}
	var nf *fleet.NotFoundError
	if _, err := inv.Machine(machineID(2)); !errors.As(err, &nf) {
		t.Fatalf("unknown machine: err = %v, want *NotFoundError", err)
	}
}

func testUnchangedNoWrite(t *testing.T, b *storeharness.Backend) {
	cs := &counting{Store: b.Open(t)}
	clk := newClock()
	inv := fleet.Open(cs, fleet.Options{Now: clk.Now, PersistSeenEvery: 5 * time.Minute})
	r := report(1, pl("a@corp", "1.0.0"), pl("b@corp", "1.0.0"))
	put(t, inv, "tok", r)
	before := cs.writes.Load()
	for i := 0; i < 5; i++ {
		clk.Add(30 * time.Second)
		r.Created = clk.Now() // a new report of the same inventory
		if put(t, inv, "tok", r) {
			t.Fatal("an unchanged report changed the inventory")
		}
	}
	if w := cs.writes.Load() - before; w != 0 {
		t.Fatalf("unchanged reports wrote %d keys, want none", w)
	}
	mi, err := inv.Machine(machineID(1))
	if err != nil || !mi.LastSeen.Equal(clk.Now()) {
		t.Fatalf("last seen = %v (%v), want the latest report %v", mi.LastSeen, err, clk.Now())
	}
	clk.Add(5 * time.Minute)
	put(t, inv, "tok", r)
	if w := cs.writes.Load() - before; w != 1 {
		t.Fatalf("after the persist interval an unchanged report writes the last-seen time only: %d writes", w)
	}
}

func testReplicaTouch(t *testing.T, b *storeharness.Backend) {
	s1 := b.Open(t)
	cs := &counting{Store: b.Again(t, s1)}
	clk := newClock()
	one := fleet.Open(s1, fleet.Options{Now: clk.Now})
	two := fleet.Open(cs, fleet.Options{Now: clk.Now})
	r := report(7, pl("a@corp", "1.0.0"))
	put(t, one, "tok", r)
	for i := 0; i < 3; i++ {
		clk.Add(time.Second)
		read := cs.keysRead.Load()
		if put(t, two, "tok", r) {
			t.Fatal("the same report through another replica is unchanged")
		}
		if n := cs.keysRead.Load() - read; n != 1 {
			t.Fatalf("an unchanged report read %d keys, want 1 (the machine's seen record)", n)
		}
	}
	if w := cs.writes.Load(); w != 0 {
		t.Fatalf("the other replica wrote %d keys for unchanged reports", w)
	}
	mi, err := two.Machine(machineID(7))
	if err != nil || !mi.LastSeen.Equal(clk.Now()) {
		t.Fatalf("last seen on the replica that got the touch = %v, want %v (%v)", mi.LastSeen, clk.Now(), err)
	}
}

// A machine goes back to an earlier inventory through another replica:
// that is a change, whatever the first replica remembers.
func testRevertThroughReplicas(t *testing.T, b *storeharness.Backend) {
	s1 := b.Open(t)
	one := fleet.Open(s1, fleet.Options{})
	two := fleet.Open(b.Again(t, s1), fleet.Options{})
	x := report(5, pl("a@corp", "1.0.0"))
	y := report(5, pl("a@corp", "1.0.0"), pl("b@corp", "1.0.0"))
	put(t, one, "tok", x)
	put(t, one, "tok", x)
	if !put(t, two, "tok", y) {
		t.Fatal("y is a change")
	}
	if !put(t, one, "tok", x) {
		t.Fatal("going back to x through the first replica is a change too")
	}
	if hs, _, _ := one.Holders("b@corp", "", 10); len(hs) != 0 {
		t.Fatalf("b@corp is gone from machine 5: holders %v", hs)
	}
}

func testOwner(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	inv := fleet.Open(st, fleet.Options{})
	put(t, inv, "alice", report(1, pl("a@corp", "1.0.0")))
	for _, inv := range []*fleet.Store{inv, fleet.Open(b.Again(t, st), fleet.Options{})} {
		for _, r := range []inventory.Report{report(1, pl("evil@corp", "6.6.6")), report(1, pl("a@corp", "1.0.0"))} {
			_, err := inv.Put("mallory", r)
			var oe *fleet.OwnerError
			if !errors.As(err, &oe) || oe.Owner != "alice" || oe.Machine != machineID(1) {
				t.Fatalf("another token's report: err = %v, want *OwnerError naming alice", err)
			}
		}
	}
	mi, err := inv.Machine(machineID(1))
	if err != nil || mi.Report.Plugins[0].ID != "a@corp" {
		t.Fatalf("the record changed: %+v %v", mi, err)
	}
	if hs, _, _ := inv.Holders("evil@corp", "", 10); len(hs) != 0 {
		t.Fatalf("a refused report reached the index: %v", hs)
	}
}

func testWhoHas(t *testing.T, b *storeharness.Backend) {
	cs := &counting{Store: b.Open(t)}
	inv := fleet.Open(cs, fleet.Options{})
	var want []string
	for i := 0; i < 40; i++ {
		ps := []inventory.Plugin{pl("common@corp", "1.0.0")}
		if i%10 == 3 {
			ps = append(ps, pl("rare@corp", "0.1.0"))
			want = append(want, machineID(i))
		}
		put(t, inv, "tok", report(i, ps...))
	}
	cs.keysRead.Store(0)
	var got []string
	after := ""
	for {
		hs, next, err := inv.Holders("rare@corp", after, 3)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, machinesOf(hs)...)
		if next == "" {
			break
		}
		after = next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("holders of rare@corp = %v, want %v", got, want)
	}
	// 4 holders in two pages: their index entries, their last-seen times,
	// and one look-ahead key per page; never the 40 machines' entries.
	if n := cs.keysRead.Load(); n > 2*int64(len(want))+2 {
		t.Fatalf("who-has read %d keys for %d holders: it scans more than the plugin's machines", n, len(want))
	}
	hs, _, _ := inv.Holders("common@corp", "", 1000)
	if len(hs) != 40 {
		t.Fatalf("common@corp on %d machines, want 40", len(hs))
	}
}

// Each holder carries the kind of client of its machine's last report: a
// change of client is a changed report; a seen record written without the
// kind (by an earlier server) is completed by the next, unchanged, report.
func testClientKind(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	inv := fleet.Open(st, fleet.Options{PersistSeenEvery: time.Hour})
	kindOf := func() string {
		t.Helper()
		hs, _, err := inv.Holders("a@corp", "", 10)
		if err != nil || len(hs) != 1 {
			t.Fatalf("holders = %+v, %v", hs, err)
		}
		return hs[0].ClientKind
	}
	r := report(1, pl("a@corp", "1.0.0"))
	r.Client.Kind = inventory.KindClaudeCode
	put(t, inv, "tok", r)
	if k := kindOf(); k != inventory.KindClaudeCode {
		t.Fatalf("client kind %q, want %s", k, inventory.KindClaudeCode)
	}
	r.Client.Kind = inventory.KindWharfAgent
	if !put(t, inv, "tok", r) {
		t.Fatal("a report through another client is not a change")
	}
	if k := kindOf(); k != inventory.KindWharfAgent {
		t.Fatalf("after a report through the agent runtime: client kind %q", k)
	}
	// An earlier server's seen record: no kind.
	err := st.Update(func(tx store.Tx) error {
		raw, err := tx.Get(fleet.BucketSeen, machineID(1))
		if err != nil {
			return err
		}
		var sr map[string]any
		if err := json.Unmarshal(raw, &sr); err != nil {
			return err
		}
		delete(sr, "k")
		raw, _ = json.Marshal(sr)
		return tx.Put(fleet.BucketSeen, machineID(1), raw)
	})
	if err != nil {
		t.Fatal(err)
	}
	if k := kindOf(); k != "" {
		t.Fatalf("a seen record without a kind shows %q", k)
	}
	if put(t, fleet.Open(st, fleet.Options{PersistSeenEvery: time.Hour}), "tok", r) {
		t.Fatal("the same report again is a change")
	}
	if k := kindOf(); k != inventory.KindWharfAgent {
		t.Fatalf("an unchanged report did not complete the seen record: client kind %q", k)
	}
}

func testCounts(t *testing.T, b *storeharness.Backend) {
	inv := fleet.Open(b.Open(t), fleet.Options{Shards: 4})
	for i := 0; i < 10; i++ {
		p := pl("x@corp", "1.0.0")
		if i < 3 {
			p = pl("x@corp", "2.0.0")
			p.State, p.Install = inventory.StateRevoked, inventory.InstallManaged
		}
		put(t, inv, "tok", report(i, p, pl("y@corp", "1.0.0")))
	}
	c, err := inv.Plugin("x@corp")
	if err != nil {
		t.Fatal(err)
	}
	if c.Machines != 10 || c.Versions["1.0.0"] != 7 || c.Versions["2.0.0"] != 3 || c.States["revoked"] != 3 ||
		c.Installs["managed"] != 3 || c.Digests[digest("x@corp2.0.0")] != 3 {
		t.Fatalf("counts of x@corp = %+v", c)
	}
	// Machines drop x and y: the counts follow, and empty plugins vanish.
	for i := 0; i < 10; i++ {
		ps := []inventory.Plugin{pl("y@corp", "1.0.0")}
		if i >= 3 {
			ps = nil
		}
		put(t, inv, "tok", report(i, ps...))
	}
	all, err := inv.Plugins()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].Plugin != "y@corp" || all[0].Machines != 3 || all[0].Versions["1.0.0"] != 3 {
		t.Fatalf("plugins = %+v, want y@corp on 3 machines only", all)
	}
}

// testConcurrentCounts: machines reporting at once through three replicas,
// with few count shards so that their transactions collide, lose no count.
func testConcurrentCounts(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	replicas := []*fleet.Store{
		fleet.Open(st, fleet.Options{Shards: 2}),
		fleet.Open(b.Again(t, st), fleet.Options{Shards: 2}),
		fleet.Open(b.Again(t, st), fleet.Options{Shards: 2}),
	}
	const workers, each = 6, 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				n := w*each + i
				inv := replicas[n%len(replicas)]
				// First x 1.0.0 and y, then x moves to 2.0.0 and y goes.
				if _, err := inv.Put("tok", report(n, pl("x@corp", "1.0.0"), pl("y@corp", "1.0.0"))); err != nil {
					errs <- err
					return
				}
				if _, err := replicas[(n+1)%len(replicas)].Put("tok", report(n, pl("x@corp", "2.0.0"))); err != nil {
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
	all, err := replicas[0].Plugins()
	if err != nil {
		t.Fatal(err)
	}
	const n = workers * each
	if len(all) != 1 || all[0].Plugin != "x@corp" || all[0].Machines != n || all[0].Versions["2.0.0"] != n || len(all[0].Versions) != 1 {
		t.Fatalf("plugins = %+v, want x@corp 2.0.0 on %d machines and nothing else", all, n)
	}
	hs, _, err := replicas[1].Holders("x@corp", "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != n {
		t.Fatalf("who has x@corp: %d machines, want %d", len(hs), n)
	}
}

func testBatches(t *testing.T, b *storeharness.Backend) {
	cs := &counting{Store: b.Open(t)}
	inv := fleet.Open(cs, fleet.Options{BatchPlugins: 3})
	var big []inventory.Plugin
	for i := 0; i < 10; i++ {
		big = append(big, pl(fmt.Sprintf("p%d@corp", i), "1.0.0"))
	}
	put(t, inv, "tok", report(1, big...))
	// Replace with a smaller set; the second batch fails, as a crash would.
	small := []inventory.Plugin{pl("p0@corp", "2.0.0"), pl("new@corp", "1.0.0")}
	cs.failAt.Store(cs.updates.Load() + 3)
	if _, err := inv.Put("tok", report(1, small...)); !errors.Is(err, errInjected) {
		t.Fatalf("err = %v, want the injected failure", err)
	}
	// The client sends the same report again: it is not "unchanged" while
	// its index is incomplete, and the retry finishes it.
	inv2 := fleet.Open(cs, fleet.Options{BatchPlugins: 3})
	if !put(t, inv2, "tok", report(1, small...)) {
		t.Fatal("a report whose indexing was interrupted must be indexed again")
	}
	all, err := inv2.Plugins()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range all {
		ids = append(ids, fmt.Sprintf("%s:%d", c.Plugin, c.Machines))
		if c.Machines != 1 || len(c.Versions) != 1 {
			t.Errorf("counts of %s = %+v, want one machine, one version", c.Plugin, c)
		}
	}
	if !slices.Equal(ids, []string{"new@corp:1", "p0@corp:1"}) {
		t.Fatalf("plugins after the retry = %v", ids)
	}
	mi, err := inv2.Machine(machineID(1))
	if err != nil || mi.Indexing {
		t.Fatalf("machine still indexing after the retry: %+v %v", mi, err)
	}
}

func testStale(t *testing.T, b *storeharness.Backend) {
	clk := newClock()
	inv := fleet.Open(b.Open(t), fleet.Options{Now: clk.Now})
	put(t, inv, "tok", report(1, pl("a@corp", "1.0.0")))
	put(t, inv, "tok", report(2))
	clk.Add(10 * 24 * time.Hour)
	put(t, inv, "tok", report(3))
	r2 := report(2)
	put(t, inv, "tok", r2) // unchanged: a touch, remembered in memory
	stale, next, err := inv.Stale(clk.Now().Add(-7*24*time.Hour), "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) != 1 || stale[0].Machine != machineID(1) || next != "" {
		t.Fatalf("stale = %+v, want only machine 1", stale)
	}

	// Machines all over the id space, paged two at a time: every stale one
	// once, in id order, and none of the recent ones.
	var want []string
	for i, id := range []string{"m-ff", "m-00", "m-7f", "m-80", "m-0f", "m-f0", "m-10"} {
		r := report(100 + i)
		r.Machine.ID = id + fmt.Sprintf("%030x", 0xabc0+i)
		put(t, inv, "tok", r)
		want = append(want, r.Machine.ID)
	}
	recent := report(200)
	recent.Machine.ID = "m-80" + strings.Repeat("e", 30)
	clk.Add(10 * 24 * time.Hour)
	put(t, inv, "tok", recent)
	want = append(want, machineID(1), machineID(2), machineID(3))
	slices.Sort(want)
	var got []string
	after, pages := "", 0
	for {
		page, next, err := inv.Stale(clk.Now().Add(-7*24*time.Hour), after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page {
			got = append(got, m.Machine)
		}
		if pages++; next == "" || pages > 20 {
			break
		}
		after = next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("stale machines paged 2 at a time = %v, want %v", got, want)
	}
	if _, _, err := inv.Stale(clk.Now(), "not a machine id", 2); err != nil {
		t.Fatalf("a cursor that is no machine id: %v", err)
	}
}

// A token reports at most its quota's machines and plugin ids; a refused
// report stores nothing, and replicas share the usage.
func testQuota(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	inv := fleet.Open(st, fleet.Options{})
	other := fleet.Open(b.Again(t, st), fleet.Options{})
	q := fleet.Quota{Machines: 2, Plugins: 3}
	within := func(inv *fleet.Store, r inventory.Report) error {
		_, err := inv.PutWithin("agent", q, r)
		return err
	}
	if err := within(inv, report(1, pl("a@corp", "1.0.0"), pl("b@corp", "1.0.0"))); err != nil {
		t.Fatal(err)
	}
	// The same machine again, changed, is no new machine.
	if err := within(other, report(1, pl("a@corp", "1.1.0"))); err != nil {
		t.Fatal(err)
	}
	if err := within(other, report(2, pl("c@corp", "1.0.0"))); err != nil {
		t.Fatal(err)
	}
	var qe *fleet.QuotaError
	for _, r := range []inventory.Report{report(3), report(4, pl("x@corp", "1.0.0"))} {
		err := within(inv, r)
		if !errors.As(err, &qe) || qe.What != "machines" || qe.Limit != 2 || qe.Have != 2 || !strings.Contains(err.Error(), "maxMachines") {
			t.Fatalf("a third machine: err = %v, want *QuotaError on machines", err)
		}
	}
	if _, err := inv.Machine(machineID(3)); err == nil {
		t.Fatal("a machine over the quota was stored")
	}
	// Plugins: 1 + 1 listed; 3 more on machine 2 makes 4 > 3.
	err := within(other, report(2, pl("c@corp", "1.0.0"), pl("d@corp", "1.0.0"), pl("e@corp", "1.0.0")))
	if !errors.As(err, &qe) || qe.What != "plugins" || qe.Limit != 3 || qe.Have != 2 || qe.Want != 4 {
		t.Fatalf("plugins over the quota: err = %v", err)
	}
	if hs, _, _ := inv.Holders("d@corp", "", 10); len(hs) != 0 {
		t.Fatalf("a refused report reached the index: %v", hs)
	}
	// Dropping plugins makes room.
	if err := within(inv, report(1)); err != nil {
		t.Fatal(err)
	}
	if err := within(other, report(2, pl("c@corp", "1.0.0"), pl("d@corp", "1.0.0"), pl("e@corp", "1.0.0"))); err != nil {
		t.Fatalf("within the quota after machine 1 dropped its plugin: %v", err)
	}
	u, err := inv.TokenUsage("agent")
	if err != nil || u != (fleet.Usage{Machines: 2, Plugins: 3}) {
		t.Fatalf("usage = %+v, %v", u, err)
	}
	// Another token has its own.
	if _, err := inv.PutWithin("agent2", q, report(5, pl("a@corp", "1.0.0"))); err != nil {
		t.Fatal(err)
	}
}

// PluginsPage walks every plugin once, in pages, whatever the ids.
func testPluginsPage(t *testing.T, b *storeharness.Backend) {
	inv := fleet.Open(b.Open(t), fleet.Options{Shards: 4})
	ids := []string{"a@corp", "a-b@corp", "a@corp-x", "ab@corp", "b@c", "z@corp", "a@co"}
	for n, id := range ids {
		put(t, inv, "tok", report(n, pl(id, "1.0.0")))
		put(t, inv, "tok", report(100+n, pl(id, "1.0.0"), pl("common@corp", "1.0.0")))
	}
	for _, limit := range []int{1, 2, 3, 100} {
		seen := map[string]int{}
		after, pages := "", 0
		for {
			page, next, err := inv.PluginsPage(after, limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > limit {
				t.Fatalf("limit %d: a page of %d", limit, len(page))
			}
			for _, c := range page {
				seen[c.Plugin] += c.Machines
			}
			pages++
			if next == "" {
				break
			}
			after = next
		}
		if len(seen) != len(ids)+1 || seen["common@corp"] != len(ids) {
			t.Fatalf("limit %d: %d pages saw %v", limit, pages, seen)
		}
		for _, id := range ids {
			if seen[id] != 2 {
				t.Fatalf("limit %d: %s on %d machines, want 2 (%v)", limit, id, seen[id], seen)
			}
		}
	}
}
