package api

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
)

// The console reads the audit log newest first, page by page, with the
// filters, across many windows of the log.
func TestAuditNewestFirst(t *testing.T) {
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q := auditQuery{}
	if got, next, err := auditNewest(st, q, 0, 10); err != nil || len(got) != 0 || next != 0 {
		t.Fatalf("empty log: %v %d %v", got, next, err)
	}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	const n = 700
	if err := st.Update(func(tx store.Tx) error {
		for i := 1; i <= n; i++ {
			action := ActionTokenCreate
			if i%7 == 0 {
				action = ActionPolicyPut
			}
			if err := audit.Append(tx, AuditEntry{Time: t0.Add(time.Duration(i) * time.Minute), Action: action, Actor: fmt.Sprintf("tok_%d", i%3),
				Object: fmt.Sprintf("obj-%d", i)}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var last uint64
	if err := st.View(func(r store.Reader) (err error) { last, err = lastSeq(r); return }); err != nil || last != n {
		t.Fatalf("last sequence %d, %v; want %d", last, err, n)
	}
	readAll := func(q auditQuery, limit int) []uint64 {
		var seqs []uint64
		var before uint64
		for page := 0; ; page++ {
			got, next, err := auditNewest(st, q, before, limit)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range got {
				seqs = append(seqs, e.Seq)
			}
			if next == 0 {
				return seqs
			}
			if page > n {
				t.Fatal("paging does not end")
			}
			before = next
		}
	}
	want := func(keep func(i int) bool) []uint64 {
		var out []uint64
		for i := n; i >= 1; i-- {
			if keep(i) {
				out = append(out, uint64(i))
			}
		}
		return out
	}
	if got := readAll(auditQuery{}, 50); !reflect.DeepEqual(got, want(func(int) bool { return true })) {
		t.Errorf("unfiltered, newest first: %d entries, first %v", len(got), got[:min(5, len(got))])
	}
	if got := readAll(auditQuery{action: ActionPolicyPut}, 30); !reflect.DeepEqual(got, want(func(i int) bool { return i%7 == 0 })) {
		t.Errorf("action filter: %v", got)
	}
	q = auditQuery{actor: "tok_1", object: "obj-1", since: t0.Add(100 * time.Minute), until: t0.Add(200 * time.Minute)}
	if got := readAll(q, 7); !reflect.DeepEqual(got, want(func(i int) bool {
		return i%3 == 1 && strings.Contains(fmt.Sprint("obj-", i), "obj-1") && i >= 100 && i < 200
	})) {
		t.Errorf("actor, object and time range: %v", got)
	}
}

// Details read as labelled values, never as a JSON map.
func TestAuditDetails(t *testing.T) {
	e := AuditEntry{Detail: map[string]any{
		"policyVersion": "sha256:ab",
		"reasons":       []any{"org/blockedPlugins: x is blocked", "team/y: z"},
		"source":        map[string]any{"source": "github", "repo": "corp/plugins"},
		"expiresAt":     "2027-01-02T03:04:05Z",
		"maxMachines":   float64(10),
		"quota":         map[string]any{"maxPlugins": float64(3), "strict": true},
	}}
	var got []string
	for _, d := range auditDetails(e) {
		got = append(got, d.Key+"="+d.Value+strings.Join(d.List, "|"))
	}
	want := []string{"expires at=2027-01-02 03:04:05 UTC", "max machines=10", "policy version=sha256:ab",
		"quota=max plugins: 3; strict: yes", "reasons=org/blockedPlugins: x is blocked|team/y: z", "source=corp/plugins"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("details:\n%q\nwant\n%q", got, want)
	}
}

func FuzzAuditTime(f *testing.F) {
	for _, s := range []string{"", "2026-12-03", "2026-12-03T15:04", "2026-12-03T15:04:05Z", "yesterday", "2026-13-45", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		tm, err := parseAuditTime("since", v)
		if err != nil {
			var ae *APIError
			if !errors.As(err, &ae) || ae.Field != "since" || ae.Status != 400 {
				t.Fatalf("%q: %v is not a 400 naming the field", v, err)
			}
			return
		}
		if strings.TrimSpace(v) == "" && !tm.IsZero() {
			t.Fatalf("empty %q gave %v", v, tm)
		}
	})
}
