package fleet

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/store"
)

// The fleet's history: one record per plugin per day of how many machines
// had each version, and how many ran it active (not revoked, not held),
// so that adoption and the convergence of a revocation can be drawn over
// time. It is bounded: HistoryDays days per plugin and MaxSeries versions
// (and digests) per day.

// BucketDaily holds the daily records: plugin id + "|" + YYYY-MM-DD → Day.
const BucketDaily = "inventory-daily"

const (
	// HistoryDays is how many daily records a plugin keeps; older ones are
	// deleted when a newer one is written.
	HistoryDays = 90
	// MaxSeries bounds the versions and the digests one day records: the
	// most common ones; the rest are summed under Other.
	MaxSeries = 16
	// Other is the key the versions (or digests) past MaxSeries are summed
	// under.
	Other = "(other)"
	// DefaultRecordEvery is how often, at most, a replica records a
	// plugin's day from the reports it receives.
	DefaultRecordEvery = 10 * time.Minute
)

// Day is one plugin's fleet on one day (UTC), as last recorded that day.
type Day struct {
	Date     string `json:"date"` // YYYY-MM-DD
	Machines int    `json:"machines"`
	// Versions counts machines per version; Active those that run it
	// active; ActiveDigests machines running a digest active.
	Versions      map[string]int `json:"versions"`
	Active        map[string]int `json:"active"`
	ActiveDigests map[string]int `json:"activeDigests,omitempty"`
}

func dayKey(id, date string) string { return id + keySep + date }

// cap keeps the MaxSeries largest entries of m and sums the rest under
// Other.
func capSeries(m map[string]int) map[string]int {
	if len(m) <= MaxSeries {
		return m
	}
	type kv struct {
		k string
		n int
	}
	all := make([]kv, 0, len(m))
	for k, n := range m {
		all = append(all, kv{k, n})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].k < all[j].k
	})
	out := make(map[string]int, MaxSeries)
	for i, e := range all {
		if i < MaxSeries-1 {
			out[e.k] = e.n
		} else {
			out[Other] += e.n
		}
	}
	return out
}

// RecordDay records plugin id's fleet today (by the Store's clock), from
// its counts and a walk of its machines, replacing today's earlier
// record, and deletes the plugin's records beyond HistoryDays.
func (s *Store) RecordDay(id string) (Day, error) {
	now := s.opts.Now().UTC()
	c, err := s.Plugin(id)
	if err != nil {
		return Day{}, err
	}
	d := Day{Date: now.Format(time.DateOnly), Machines: c.Machines, Versions: map[string]int{}, Active: map[string]int{}, ActiveDigests: map[string]int{}}
	for v, n := range c.Versions {
		d.Versions[v] = n
	}
	after := ""
	for {
		hs, next, err := s.Holders(id, after, 1000)
		if err != nil {
			return Day{}, err
		}
		for _, h := range hs {
			versions, digests := map[string]bool{}, map[string]bool{}
			for _, in := range h.Installs {
				if in.State == inventory.StateActive {
					versions[in.Version] = true
					if in.Digest != "" {
						digests[in.Digest] = true
					}
				}
			}
			for v := range versions {
				d.Active[v]++
			}
			for dg := range digests {
				d.ActiveDigests[dg]++
			}
		}
		if next == "" {
			break
		}
		after = next
	}
	d.Versions, d.Active, d.ActiveDigests = capSeries(d.Versions), capSeries(d.Active), capSeries(d.ActiveDigests)
	raw, err := json.Marshal(d)
	if err != nil {
		return Day{}, err
	}
	err = s.st.Update(func(tx store.Tx) error {
		if err := tx.Put(BucketDaily, dayKey(id, d.Date), raw); err != nil {
			return err
		}
		kvs, err := tx.List(BucketDaily, id+keySep)
		if err != nil {
			return err
		}
		for i := 0; i < len(kvs)-HistoryDays; i++ {
			if err := tx.Delete(BucketDaily, kvs[i].Key); err != nil {
				return err
			}
		}
		return nil
	})
	return d, err
}

// RecordDue reports whether this replica should record plugin id's day
// now: at most once per DefaultRecordEvery per plugin. A true answer
// claims the record.
func (s *Store) RecordDue(id string) bool {
	now := s.opts.Now()
	s.histMu.Lock()
	defer s.histMu.Unlock()
	if s.recorded == nil || len(s.recorded) >= s.opts.MaxCached {
		s.recorded = map[string]time.Time{}
	}
	if t, ok := s.recorded[id]; ok && now.Sub(t) < DefaultRecordEvery && now.Format(time.DateOnly) == t.Format(time.DateOnly) {
		return false
	}
	s.recorded[id] = now
	return true
}

// History returns plugin id's daily records, oldest first.
func (s *Store) History(id string) ([]Day, error) {
	var out []Day
	err := s.st.View(func(r store.Reader) error {
		kvs, err := r.List(BucketDaily, id+keySep)
		if err != nil {
			return err
		}
		out = make([]Day, 0, len(kvs))
		for _, kv := range kvs {
			if strings.Contains(strings.TrimPrefix(kv.Key, id+keySep), keySep) {
				continue // another plugin whose id extends this one's
			}
			var d Day
			if err := json.Unmarshal(kv.Value, &d); err != nil {
				return fmt.Errorf("inventory: daily record %s: corrupt: %w", kv.Key, err)
			}
			out = append(out, d)
		}
		return nil
	})
	return out, err
}
