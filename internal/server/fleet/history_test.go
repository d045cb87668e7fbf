package fleet_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/fleet"
	"github.com/wharfhq/wharf/internal/testutil/storeharness"
)

// The daily history on every backend: a record per plugin per day with
// the machines per version and those running it active; bounded in days
// and in versions per day.
func TestHistory(t *testing.T) {
	storeharness.Run(t, "invhist", func(t *testing.T, b *storeharness.Backend) {
		st := b.Open(t)
		clk := newClock()
		inv := fleet.Open(st, fleet.Options{Now: clk.Now})
		put := func(n int, ps ...inventory.Plugin) {
			t.Helper()
			if _, err := inv.Put("tok", report(n, ps...)); err != nil {
				t.Fatal(err)
			}
		}
		// Day 1: three machines on 1.0; day 2: two move to 2.0; day 3:
		// 1.0 is revoked and its last machine reports it so.
		for n := 1; n <= 3; n++ {
			put(n, pl("app@corp", "1.0"))
		}
		if _, err := inv.RecordDay("app@corp"); err != nil {
			t.Fatal(err)
		}
		clk.Add(24 * time.Hour)
		put(1, pl("app@corp", "2.0"))
		put(2, pl("app@corp", "2.0"))
		if _, err := inv.RecordDay("app@corp"); err != nil {
			t.Fatal(err)
		}
		// Recording again the same day replaces the day's record.
		if _, err := inv.RecordDay("app@corp"); err != nil {
			t.Fatal(err)
		}
		clk.Add(24 * time.Hour)
		revoked := pl("app@corp", "1.0")
		revoked.State = inventory.StateRevoked
		put(3, revoked)
		if _, err := inv.RecordDay("app@corp"); err != nil {
			t.Fatal(err)
		}
		days, err := inv.History("app@corp")
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, d := range days {
			got += fmt.Sprintf("%s m=%d v1=%d v2=%d a1=%d a2=%d; ", d.Date, d.Machines, d.Versions["1.0"], d.Versions["2.0"], d.Active["1.0"], d.Active["2.0"])
		}
		want := "2026-03-01 m=3 v1=3 v2=0 a1=3 a2=0; 2026-03-02 m=3 v1=1 v2=2 a1=1 a2=2; 2026-03-03 m=3 v1=1 v2=2 a1=0 a2=2; "
		if got != want {
			t.Fatalf("history:\n%s\nwant\n%s", got, want)
		}
		if days[1].ActiveDigests[pl("app@corp", "1.0").Digest] != 1 || days[2].ActiveDigests[pl("app@corp", "1.0").Digest] != 0 {
			t.Errorf("active digests %v %v", days[1].ActiveDigests, days[2].ActiveDigests)
		}
		if other, err := inv.History("other@corp"); err != nil || len(other) != 0 {
			t.Errorf("a plugin without records: %v %v", other, err)
		}

		// Bounded: past HistoryDays, the oldest records go.
		for i := 0; i < fleet.HistoryDays+5; i++ {
			clk.Add(24 * time.Hour)
			if _, err := inv.RecordDay("app@corp"); err != nil {
				t.Fatal(err)
			}
		}
		days, err = inv.History("app@corp")
		if err != nil {
			t.Fatal(err)
		}
		if len(days) != fleet.HistoryDays || days[len(days)-1].Date != clk.Now().Format(time.DateOnly) {
			t.Fatalf("%d days kept, last %s; want %d up to today", len(days), days[len(days)-1].Date, fleet.HistoryDays)
		}
	})
}

// A day records at most MaxSeries versions: the most common, the rest
// summed.
func TestHistoryCapsVersions(t *testing.T) {
	inv := fleet.Open(boltStore(t), fleet.Options{})
	for n := 1; n <= fleet.MaxSeries+10; n++ {
		v := fmt.Sprintf("1.%d", n)
		ps := []inventory.Plugin{pl("app@corp", v)}
		if n <= 3 { // three popular versions
			for m := 0; m < 5; m++ {
				if _, err := inv.Put("tok", report(1000+n*10+m, pl("app@corp", v))); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := inv.Put("tok", report(n, ps...)); err != nil {
			t.Fatal(err)
		}
	}
	d, err := inv.RecordDay("app@corp")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Versions) != fleet.MaxSeries || d.Versions["1.1"] != 6 || d.Versions["1.3"] != 6 {
		t.Fatalf("%d versions recorded: %v", len(d.Versions), d.Versions)
	}
	sum := 0
	for _, n := range d.Versions {
		sum += n
	}
	if sum != fleet.MaxSeries+10+15 || d.Versions[fleet.Other] != sum-6*3-(fleet.MaxSeries-4) {
		t.Errorf("sum %d, other %d", sum, d.Versions[fleet.Other])
	}
}

// A replica records a plugin's day from reports at most once per interval.
func TestRecordDue(t *testing.T) {
	clk := newClock()
	inv := fleet.Open(boltStore(t), fleet.Options{Now: clk.Now})
	if !inv.RecordDue("a@m") {
		t.Fatal("first record not due")
	}
	for i := 0; i < 10; i++ {
		clk.Add(time.Minute - time.Second)
		if inv.RecordDue("a@m") {
			t.Fatalf("due again after %d minutes", i+1)
		}
	}
	if !inv.RecordDue("b@m") {
		t.Error("another plugin is not due")
	}
	clk.Add(time.Minute)
	if !inv.RecordDue("a@m") {
		t.Error("not due after the interval")
	}
}

func boltStore(t *testing.T) store.Store {
	t.Helper()
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
