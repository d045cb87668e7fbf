package policystate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/policystate"
	"github.com/wharfhq/wharf/internal/server/tokens"
	"github.com/wharfhq/wharf/internal/server/toolpins"
	"github.com/wharfhq/wharf/internal/testutil/storeharness"
)

// Approving tool definitions advances the head, puts the pin in the signed
// bundle and refuses what no machine reports, what is already pinned and
// pins beyond the limit, changing nothing then.
func TestToolPinApprovals(t *testing.T) {
	storeharness.Run(t, "policystate-toolpins", func(t *testing.T, b *storeharness.Backend) {
		st := b.Open(t)
		var compiles atomic.Int64
		s := newState(t, st, &compiles, policystate.Options[*engine]{TTL: time.Hour})
		ctx := context.Background()
		h1, err := s.Put(ctx, change("org", nil, `{}`, nil), anyVersion, admin)
		if err != nil {
			t.Fatal(err)
		}
		hash := "mcp1:" + strings.Repeat("a", 64)
		rec := toolpins.Record{Plugin: "db@corp", Server: "pg", Hash: hash, By: "tok_admin", Approved: time.Now().UTC()}
		var nr *policystate.NotReportedError
		if _, _, err := s.ApproveToolPin(rec, admin); !errors.As(err, &nr) {
			t.Fatalf("unreported definitions: %v", err)
		}
		if err := st.Update(func(tx store.Tx) error {
			return toolpins.Observe(tx, "m-1", []inventory.MCPServer{{Plugin: "db@corp", Server: "pg", ToolsHash: hash}}, time.Now())
		}); err != nil {
			t.Fatal(err)
		}
		h2, prev, err := s.ApproveToolPin(rec, admin)
		if err != nil || prev != "" || h2.Revision != h1.Head.Revision+1 || h2.Version == h1.Head.Version {
			t.Fatalf("approval: %+v %q %v (before %+v)", h2, prev, err, h1.Head)
		}
		bun, err := s.Bundle(ctx, tokens.Identity{})
		if err != nil {
			t.Fatal(err)
		}
		if _, info, err := policy.ReadBundle(bytes.NewReader(bun.Body), []byte(s.PublicKeyPEM())); err != nil || len(info.ToolPins) != 1 || info.ToolPins[0].Hash != hash {
			t.Fatalf("bundle after approval: %+v %v", info, err)
		}
		var ap *policystate.AlreadyPinnedError
		if _, _, err := s.ApproveToolPin(rec, admin); !errors.As(err, &ap) {
			t.Fatalf("approving it twice: %v", err)
		}
		// Fill up to the limit; a new server's pin is refused.
		for from := 1; from < toolpins.Max; from += 100 { // etcd bounds the keys of one transaction
			if err := st.Update(func(tx store.Tx) error {
				for i := from; i < from+100 && i < toolpins.Max; i++ {
					if err := toolpins.Put(tx, toolpins.Record{Plugin: fmt.Sprintf("p%d@corp", i), Server: "s", Hash: hash}); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Update(func(tx store.Tx) error {
			return toolpins.Observe(tx, "m-2", []inventory.MCPServer{{Plugin: "new@corp", Server: "s", ToolsHash: hash}}, time.Now())
		}); err != nil {
			t.Fatal(err)
		}
		var tm *policystate.TooManyPinsError
		if _, _, err := s.ApproveToolPin(toolpins.Record{Plugin: "new@corp", Server: "s", Hash: hash}, admin); !errors.As(err, &tm) {
			t.Fatalf("beyond the limit: %v", err)
		}
		if h, _ := s.Head(time.Now()); h != h2 {
			t.Fatalf("refusals moved the head: %+v, want %+v", h, h2)
		}
	})
}

// PinFirst pins a server nothing pins, and leaves an existing pin as it is
// (AlreadyPinnedError naming the pin's hash), moving no head.
func TestPinFirstNeverReplaces(t *testing.T) {
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "s.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var compiles atomic.Int64
	s := newState(t, st, &compiles, policystate.Options[*engine]{TTL: time.Hour})
	h1 := "mcp1:" + strings.Repeat("a", 64)
	h2 := "mcp1:" + strings.Repeat("b", 64)
	for m, h := range map[string]string{"m-1": h1, "m-2": h2} {
		if err := st.Update(func(tx store.Tx) error {
			return toolpins.Observe(tx, m, []inventory.MCPServer{{Plugin: "db@corp", Server: "pg", ToolsHash: h}}, time.Now())
		}); err != nil {
			t.Fatal(err)
		}
	}
	wharf := policystate.Actor{ID: "wharf"}
	head, err := s.PinFirst(toolpins.Record{Plugin: "db@corp", Server: "pg", Hash: h1, By: "wharf"}, wharf)
	if err != nil {
		t.Fatal(err)
	}
	var ap *policystate.AlreadyPinnedError
	if _, err := s.PinFirst(toolpins.Record{Plugin: "db@corp", Server: "pg", Hash: h2, By: "wharf"}, wharf); !errors.As(err, &ap) || ap.Hash != h1 {
		t.Fatalf("a second first pin: %v", err)
	}
	var rec toolpins.Record
	if err := st.View(func(r store.Reader) (err error) { rec, _, err = toolpins.Get(r, "db@corp", "pg"); return err }); err != nil || rec.Hash != h1 {
		t.Fatalf("pin = %+v %v; want %s kept", rec, err, h1)
	}
	if h, _ := s.Head(time.Now()); h != head {
		t.Fatalf("the refused pin moved the head: %+v, want %+v", h, head)
	}
}
