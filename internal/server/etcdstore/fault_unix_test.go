//go:build unix

package etcdstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/etcdstore"
	"github.com/wharfhq/wharf/internal/testutil/etcdtest"
)

// TestEtcdWritesGoOnWhileAMemberIsPaused pauses (SIGSTOP) a follower, then
// the leader, of a three-member cluster whose members are processes: the
// member keeps its connections open and answers nothing. Writes through a
// client on all three members must still be acknowledged while it is
// paused, and the audit sequence stays gap-free. A watch on the same client
// sees every acknowledged write and, while the member is paused, still
// sends progress marks: it moved to a member that answers.
func TestEtcdWritesGoOnWhileAMemberIsPaused(t *testing.T) {
	c := etcdtest.StartProcesses(t, 3, "TestEtcdMemberProcess")
	s := openEtcd(t, c.Endpoints(), etcdstore.Options{Prefix: "/pause"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch, err := s.Watch(ctx, "data")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var lastMark time.Time
	drain := func() {
		for {
			select {
			case ev, ok := <-watch:
				if !ok {
					t.Fatal("watch closed")
				}
				if ev.Progress {
					lastMark = ev.AsOf
				} else {
					seen[ev.Key] = true
				}
			default:
				return
			}
		}
	}
	n := 0
	write := func() error {
		n++
		key := fmt.Sprintf("k%04d", n)
		return s.Update(func(tx store.Tx) error {
			seq, err := tx.NextSequence("audit")
			if err != nil {
				return err
			}
			if err := tx.Put("audit", fmt.Sprintf("%020d", seq), []byte(key)); err != nil {
				return err
			}
			return tx.Put("data", key, []byte("v"))
		})
	}
	var acked []string
	for _, who := range []string{"follower", "leader"} {
		leader := c.Leader()
		victim := leader
		if who == "follower" {
			victim = (leader + 1) % 3
		}
		c.Pause(victim)
		paused := time.Now()
		// Correctness, not speed: writes are acknowledged at all while
		// the member is stopped (before, one stopped member stopped them
		// all for as long as it was stopped), and the watch proves it is
		// current past the moment of the pause.
		ok := 0
		deadline := time.Now().Add(60 * time.Second)
		for (ok < 20 || !lastMark.After(paused)) && time.Now().Before(deadline) {
			if err := write(); err != nil {
				t.Logf("%s paused: write failed: %v", who, err)
				continue
			}
			acked = append(acked, fmt.Sprintf("k%04d", n))
			ok++
			drain()
		}
		c.Resume(victim)
		if ok < 20 {
			t.Fatalf("%s %s paused: %d writes acknowledged in 60s", who, c.Members[victim].Name, ok)
		}
		if !lastMark.After(paused) {
			t.Fatalf("%s %s paused: the watch sent no progress mark after the pause", who, c.Members[victim].Name)
		}
		t.Logf("%s %s paused: %d writes acknowledged, retries %+v", who, c.Members[victim].Name, ok, s.Stats())
	}
	c.WaitHealthy()
	var audit []store.KV
	if err := s.View(func(r store.Reader) (err error) { audit, err = r.List("audit", ""); return err }); err != nil {
		t.Fatal(err)
	}
	for i, kv := range audit {
		if want := fmt.Sprintf("%020d", i+1); kv.Key != want {
			t.Fatalf("audit entry %d has key %s: a gap or a duplicate", i, kv.Key)
		}
	}
	if len(audit) < len(acked) {
		t.Fatalf("%d audit entries for %d acknowledged writes", len(audit), len(acked))
	}
	deadline := time.After(60 * time.Second)
	for _, k := range acked {
		for !seen[k] {
			select {
			case ev, ok := <-watch:
				if !ok {
					t.Fatal("watch closed")
				}
				seen[ev.Key] = seen[ev.Key] || !ev.Progress
			case <-deadline:
				t.Fatalf("the watch never delivered acknowledged write %s", k)
			}
		}
	}
}
