//go:build unix

package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// hist builds a history from (call ms, return ms) pairs.
type hb struct {
	t0  time.Time
	ops []op
}

func (b *hb) add(client int, kind, key string, call, ret int, out outcome, status int, listed ...string) {
	o := op{client: client, kind: kind, key: key, call: b.t0.Add(time.Duration(call) * time.Millisecond),
		ret: b.t0.Add(time.Duration(ret) * time.Millisecond), outcome: out, status: status}
	if kind == "token-list" || kind == "revocation-list" {
		o.ids, o.complete = map[string]bool{}, true
		for _, id := range listed {
			o.ids[id] = true
		}
	}
	b.ops = append(b.ops, o)
}

func TestSetCheckFindsAMissedCreate(t *testing.T) {
	b := &hb{t0: time.Now()}
	b.add(0, "token-create", "t1", 0, 10, ok, 201)
	b.add(1, "token-list", "", 20, 30, ok, 200) // begins after the create was acknowledged, misses it
	n, reads, res := checkSet(b.ops, b.t0, tokenSet)
	if res != porcupine.Illegal {
		t.Fatalf("a list missing an acknowledged token passed the check: %s (%d ops, %d reads)", res, n, reads)
	}
}

func TestSetCheckFindsALiftedRevocationStillListed(t *testing.T) {
	b := &hb{t0: time.Now()}
	b.add(0, "revoke", "r1", 0, 10, ok, 201)
	b.add(0, "lift", "r1", 20, 30, ok, 200)
	b.add(1, "revocation-list", "", 40, 50, ok, 200, "r1")
	if _, _, res := checkSet(b.ops, b.t0, revocationSet); res != porcupine.Illegal {
		t.Fatalf("a list showing a lifted revocation passed the check: %s", res)
	}
}

func TestSetCheckFindsA404OnAPresentToken(t *testing.T) {
	b := &hb{t0: time.Now()}
	b.add(0, "token-create", "t1", 0, 10, ok, 201)
	b.add(0, "token-delete", "t1", 20, 30, refused, http.StatusNotFound) // nothing deleted it before
	b.add(1, "token-list", "", 40, 50, ok, 200, "t1")
	if _, _, res := checkSet(b.ops, b.t0, tokenSet); res != porcupine.Illegal {
		t.Fatalf("a 404 on a token listed afterwards passed the check: %s", res)
	}
}

func TestSetCheckAcceptsLinearizableHistories(t *testing.T) {
	b := &hb{t0: time.Now()}
	// t1: a list concurrent with the create may or may not see it; then
	// it is listed, deleted, and gone.
	b.add(0, "token-create", "t1", 0, 10, ok, 201)
	b.add(1, "token-list", "", 5, 15, ok, 200)
	b.add(2, "token-list", "", 6, 16, ok, 200, "t1")
	b.add(1, "token-list", "", 20, 25, ok, 200, "t1")
	b.add(0, "token-delete", "t1", 30, 40, ok, 200)
	b.add(1, "token-list", "", 45, 50, ok, 200)
	// t2: a delete whose answer was lost, then a retry refused with 404.
	b.add(0, "token-create", "t2", 60, 70, ok, 201)
	b.add(0, "token-delete", "t2", 80, 90, unknown, 503)
	b.add(0, "token-delete", "t2", 100, 110, refused, http.StatusNotFound)
	// t3: a delete whose answer was lost and that did not apply: a retry succeeds.
	b.add(0, "token-create", "t3", 120, 130, ok, 201)
	b.add(0, "token-delete", "t3", 140, 150, unknown, 0)
	b.add(1, "token-list", "", 160, 170, ok, 200, "t3")
	b.add(0, "token-delete", "t3", 180, 190, ok, 200)
	// An incomplete list (more pages) says nothing about what it lacks.
	b.add(1, "token-list", "", 135, 136, ok, 200)
	b.ops[len(b.ops)-1].complete = false
	n, reads, res := checkSet(b.ops, b.t0, tokenSet)
	if res != porcupine.Ok {
		t.Fatalf("a linearizable token history failed the check: %s", res)
	}
	if n != 8+reads || reads != 7 {
		t.Fatalf("checked %d ops with %d list observations, want 8 writes and 7 observations", n, reads)
	}

	r := &hb{t0: time.Now()}
	r.add(0, "revoke", "r1", 0, 10, ok, 201)
	r.add(1, "revocation-list", "", 20, 30, ok, 200, "r1")
	r.add(0, "lift", "r1", 40, 50, ok, 200)
	r.add(1, "revocation-list", "", 45, 55, ok, 200, "r1") // concurrent with the lift
	r.add(1, "revocation-list", "", 60, 70, ok, 200)
	if _, _, res := checkSet(r.ops, r.t0, revocationSet); res != porcupine.Ok {
		t.Fatalf("a linearizable revocation history failed the check: %s", res)
	}
}
