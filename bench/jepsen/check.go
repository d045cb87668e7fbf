//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/anishathalye/porcupine"
)

// The layer as a compare-and-set register of its version: a read returns
// the version; a write with If-Match v succeeds (to v+1) exactly when the
// version is v, else it is refused with the current version.
type casInput struct {
	read bool
	from uint64
}

type casOutput struct {
	ok      bool
	value   uint64
	unknown bool
}

var layerModel = porcupine.Model{
	Partition: byKey,
	Init:      func() any { return uint64(1) }, // created before the run
	Step: func(state, input, output any) (bool, any) {
		v, in, out := state.(uint64), input.(casInput), output.(casOutput)
		switch {
		case in.read:
			return out.value == v, v
		case out.unknown: // applied if it could apply, at any time after its call
			if v == in.from {
				return true, v + 1
			}
			return true, v
		case out.ok:
			return v == in.from && out.value == v+1, v + 1
		}
		return v != in.from && out.value == v, v
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(casInput), output.(casOutput)
		if in.read {
			return fmt.Sprintf("read -> %d", out.value)
		}
		return fmt.Sprintf("cas %d -> ok=%v value=%d unknown=%v", in.from, out.ok, out.value, out.unknown)
	},
}

// checkLinearizable checks every layer's history with porcupine. Reads
// whose outcome is unknown tell nothing and are left out; writes whose
// outcome is unknown may take effect at any time after their call.
func checkLinearizable(ops []op, t0 time.Time) (int, porcupine.CheckResult) {
	var h []porcupine.Operation
	for _, o := range ops {
		if o.kind != "layer-read" && o.kind != "layer-cas" {
			continue
		}
		if o.kind == "layer-read" && o.outcome != ok {
			continue
		}
		in := casInput{read: o.kind == "layer-read", from: o.from}
		out := casOutput{ok: o.outcome == ok, value: o.value, unknown: o.outcome == unknown}
		ret := o.ret.Sub(t0).Nanoseconds()
		if out.unknown {
			ret = math.MaxInt64
		}
		h = append(h, porcupine.Operation{ClientId: o.client, Input: in, Output: out,
			Call: o.call.Sub(t0).Nanoseconds(), Return: ret, Metadata: o.key})
	}
	return len(h), porcupine.CheckOperationsTimeout(layerModel, h, 5*time.Minute)
}

type historyEntry struct {
	Layer        string `json:"layer"`
	LayerVersion uint64 `json:"layerVersion"`
}

type auditEntry struct {
	Seq uint64 `json:"seq"`
}

// pages reads every page of a paged list (audit, policy history).
func pages(r *replica, admin, path string, each func(raw json.RawMessage)) error {
	cursor := ""
	for {
		p := path + "?limit=1000"
		if cursor != "" {
			p += "&cursor=" + cursor
		}
		res := r.do("GET", p, admin, nil)
		if res.err != nil || res.status != http.StatusOK {
			return fmt.Errorf("%s %s: %d %v", r.name, path, res.status, res.err)
		}
		var page struct {
			Entries []json.RawMessage `json:"entries"`
			Next    string            `json:"next"`
		}
		if err := json.Unmarshal(res.body, &page); err != nil {
			return err
		}
		for _, e := range page.Entries {
			each(e)
		}
		if page.Next == "" {
			return nil
		}
		cursor = page.Next
	}
}

// checkState checks the final state against the acknowledged writes: no
// write lost, each layer's history one gap-free sequence, the audit log
// gap-free and the same on every replica.
func checkState(w *workload, ops []op) []string {
	var problems []string
	bad := func(f string, a ...any) {
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(f, a...))
		}
	}
	r := w.replicas[0]
	// Layers: every acknowledged version is in the history, and the
	// history of each layer is 1, 2, 3... with no gap or repeat.
	versions := map[string][]uint64{}
	err := pages(r, w.admin, "/v1/policy/history", func(raw json.RawMessage) {
		var e historyEntry
		json.Unmarshal(raw, &e)
		versions[e.Layer] = append(versions[e.Layer], e.LayerVersion)
	})
	if err != nil {
		bad("policy history: %v", err)
	}
	have := map[string]bool{}
	for layer, vs := range versions {
		for i, v := range vs {
			have[fmt.Sprintf("%s/%d", layer, v)] = true
			if v != uint64(i+1) {
				bad("layer %s: history entry %d is version %d (a gap, repeat or reorder)", layer, i+1, v)
				break
			}
		}
	}
	acked := map[string]int{}
	for _, o := range ops {
		if o.outcome != ok {
			continue
		}
		acked[o.kind]++
		if o.kind == "layer-cas" && !have[fmt.Sprintf("%s/%d", o.key, o.value)] {
			bad("lost write: layer %s version %d acknowledged by %s", o.key, o.value, o.replica)
		}
	}
	// Tokens and revocations: acknowledged creations present (unless
	// deleted), acknowledged deletions absent.
	res := r.do("GET", "/v1/tokens", w.admin, nil)
	var toks []struct{ ID string }
	json.Unmarshal(res.body, &toks)
	live := map[string]bool{}
	for _, t := range toks {
		live[t.ID] = true
	}
	deleted, lifted := map[string]bool{}, map[string]bool{}
	for _, o := range ops {
		if o.kind == "token-delete" && (o.outcome == ok || o.status == http.StatusNotFound) {
			deleted[o.key] = true
		}
		if o.kind == "lift" && (o.outcome == ok || o.status == http.StatusNotFound) {
			lifted[o.key] = true
		}
	}
	for _, o := range ops {
		switch {
		case o.outcome != ok:
		case o.kind == "token-create" && !deleted[o.key] && !live[o.key]:
			bad("lost write: token %s acknowledged by %s is not listed", o.key, o.replica)
		case o.kind == "token-delete" && live[o.key]:
			bad("lost write: token %s deleted (acknowledged by %s) is still listed", o.key, o.replica)
		}
	}
	res = r.do("GET", "/v1/revocations", w.admin, nil)
	revoked := map[string]bool{}
	var revs []struct{ ID string }
	if json.Unmarshal(res.body, &revs) != nil {
		var wrapped struct{ Revocations []struct{ ID string } }
		json.Unmarshal(res.body, &wrapped)
		revs = wrapped.Revocations
	}
	for _, rv := range revs {
		revoked[rv.ID] = true
	}
	reports := 0
	for _, o := range ops {
		if o.outcome != ok {
			continue
		}
		switch o.kind {
		case "revoke":
			if !lifted[o.key] && !revoked[o.key] {
				bad("lost write: revocation %s acknowledged by %s is not listed", o.key, o.replica)
			}
		case "lift":
			if revoked[o.key] {
				bad("lost write: revocation %s lifted (acknowledged by %s) is still listed", o.key, o.replica)
			}
		case "report":
			if reports++; reports%10 == 0 { // a sample: each is a request
				if res := r.do("GET", "/v1/inventory/machines/"+o.key, w.admin, nil); res.status != http.StatusOK {
					bad("lost write: inventory report of %s acknowledged by %s: %d", o.key, o.replica, res.status)
				}
			}
		}
	}
	// Audit: gap-free, and every replica reports the same log.
	var first []byte
	for _, rr := range w.replicas {
		var all []json.RawMessage
		var seqs []uint64
		if err := pages(rr, w.admin, "/v1/audit", func(raw json.RawMessage) {
			all = append(all, raw)
			var e auditEntry
			json.Unmarshal(raw, &e)
			seqs = append(seqs, e.Seq)
		}); err != nil {
			bad("audit: %v", err)
			continue
		}
		for i, s := range seqs {
			if s != uint64(i+1) {
				bad("audit on %s: entry %d has sequence %d", rr.name, i+1, s)
				break
			}
		}
		j, _ := json.Marshal(all)
		if first == nil {
			first = j
		} else if !bytes.Equal(first, j) {
			bad("audit on %s differs from %s's", rr.name, w.replicas[0].name)
		}
	}
	return problems
}
