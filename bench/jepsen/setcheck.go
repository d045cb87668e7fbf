//go:build unix

package main

import (
	"fmt"
	"math"
	"net/http"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// The token set and the revocation set as sets of ids, checked one id at
// a time (an id is created once, by the server): a creation adds it, a
// deletion (lift) removes it or is refused with 404 when it is absent, and
// a list observes whether it is there.
type setOp int

const (
	setAdd setOp = iota
	setRemove
	setRead
)

type setInput struct {
	op setOp
}

type setOutput struct {
	ok       bool // add, remove: acknowledged
	notFound bool // remove: refused with 404
	unknown  bool // remove: outcome unknown (applied or not, any time after its call)
	present  bool // read: the id was listed
}

var setModel = porcupine.Model{
	Partition: byKey,
	Init:      func() any { return false },
	Step: func(state, input, output any) (bool, any) {
		in, out, present := input.(setInput), output.(setOutput), state.(bool)
		switch in.op {
		case setAdd:
			return !present, true
		case setRemove:
			switch {
			case out.unknown:
				return true, false
			case out.notFound:
				return !present, false
			}
			return present, false
		}
		return out.present == present, present
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(setInput), output.(setOutput)
		switch in.op {
		case setAdd:
			return "add"
		case setRemove:
			return fmt.Sprintf("remove -> ok=%v notFound=%v unknown=%v", out.ok, out.notFound, out.unknown)
		}
		return fmt.Sprintf("read -> present=%v", out.present)
	},
}

// byKey partitions a history by its operations' Metadata (the key).
func byKey(h []porcupine.Operation) [][]porcupine.Operation {
	by := map[string][]porcupine.Operation{}
	var keys []string
	for _, o := range h {
		k := o.Metadata.(string)
		if by[k] == nil {
			keys = append(keys, k)
		}
		by[k] = append(by[k], o)
	}
	sort.Strings(keys)
	var out [][]porcupine.Operation
	for _, k := range keys {
		out = append(out, by[k])
	}
	return out
}

// setKinds names the operations of one set in the history.
type setKinds struct {
	name                 string
	create, remove, list string
}

var (
	tokenSet      = setKinds{name: "token set", create: "token-create", remove: "token-delete", list: "token-list"}
	revocationSet = setKinds{name: "revocation set", create: "revoke", remove: "lift", list: "revocation-list"}
)

// readWindow bounds which lists are checked against an id: those that
// start before its last operation returned plus this much. Later lists
// (which only see the final state) are left to the lost-write check;
// leaving reads out never turns a linearizable history into an illegal
// one, it only keeps each partition small.
const readWindow = 5 * time.Second

// setHistory turns the operations on one set into porcupine operations,
// one partition per id. Ids are those of acknowledged creations (an
// unacknowledged creation returns no id). Removals refused for another
// reason than 404 did not apply and are left out; removals with an
// unknown outcome may apply at any time after their call. A list observes
// each id as present or absent; absence only when the list was complete.
func setHistory(ops []op, t0 time.Time, k setKinds) (h []porcupine.Operation, reads int) {
	type span struct{ call, last time.Time }
	ids := map[string]*span{}
	at := func(t time.Time) int64 { return t.Sub(t0).Nanoseconds() }
	for _, o := range ops {
		if o.kind == k.create && o.outcome == ok && o.key != "" {
			ids[o.key] = &span{call: o.call, last: o.ret}
			h = append(h, porcupine.Operation{ClientId: o.client, Input: setInput{op: setAdd}, Output: setOutput{ok: true},
				Call: at(o.call), Return: at(o.ret), Metadata: o.key})
		}
	}
	for _, o := range ops {
		sp := ids[o.key]
		if o.kind != k.remove || sp == nil {
			continue
		}
		out := setOutput{ok: o.outcome == ok, notFound: o.status == http.StatusNotFound, unknown: o.outcome == unknown}
		if !out.ok && !out.notFound && !out.unknown {
			continue
		}
		ret := at(o.ret)
		end := o.ret
		if out.unknown {
			ret, end = math.MaxInt64, o.call
		}
		if end.After(sp.last) {
			sp.last = end
		}
		h = append(h, porcupine.Operation{ClientId: o.client, Input: setInput{op: setRemove}, Output: out,
			Call: at(o.call), Return: ret, Metadata: o.key})
	}
	for _, o := range ops {
		if o.kind != k.list || o.outcome != ok {
			continue
		}
		for id, sp := range ids {
			present := o.ids[id]
			if o.ret.Before(sp.call) && !present {
				continue // listed before the id was asked for: trivially absent
			}
			if o.call.After(sp.last.Add(readWindow)) || (!present && !o.complete) {
				continue
			}
			h = append(h, porcupine.Operation{ClientId: o.client, Input: setInput{op: setRead}, Output: setOutput{present: present},
				Call: at(o.call), Return: at(o.ret), Metadata: id})
			reads++
		}
	}
	return h, reads
}

// checkSet checks one set's history with porcupine.
func checkSet(ops []op, t0 time.Time, k setKinds) (n, reads int, res porcupine.CheckResult) {
	h, reads := setHistory(ops, t0, k)
	return len(h), reads, porcupine.CheckOperationsTimeout(setModel, h, 2*time.Minute)
}
