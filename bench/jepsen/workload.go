//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// outcome of one operation as the client saw it.
type outcome int

const (
	ok      outcome = iota // acknowledged
	refused                // definitely not applied (412, 404 ...)
	unknown                // 5xx, timeout, connection error: may or may not have applied
)

// op is one operation of the history.
type op struct {
	client    int
	kind      string          // layer-read, layer-cas, token-create, token-delete, token-list, revoke, lift, revocation-list, report
	key       string          // layer, token id, revocation id, machine id
	ids       map[string]bool // token-list, revocation-list: the ids listed
	complete  bool            // token-list, revocation-list: the list had one page (absence observed too)
	from      uint64          // layer-cas: the If-Match version
	value     uint64          // layer-read: version read; layer-cas: new version (ok) or current (refused)
	outcome   outcome
	status    int
	call, ret time.Time
	replica   string
}

func (o op) write() bool {
	return o.kind != "layer-read" && o.kind != "token-list" && o.kind != "revocation-list"
}

type history struct {
	mu  sync.Mutex
	ops []op
}

func (h *history) add(o op) {
	h.mu.Lock()
	h.ops = append(h.ops, o)
	h.mu.Unlock()
}

func (h *history) snapshot() []op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]op(nil), h.ops...)
}

// workload drives the clients until stop closes.
type workload struct {
	replicas []*replica
	admin    string
	reporter string // an agent token for the inventory reports
	layers   []string
	hist     history
	next     atomic.Uint64
	stop     chan struct{}
	wg       sync.WaitGroup
	// bundle monotonicity, per poller
	bundleMu    sync.Mutex
	bundleReads int
	bundleBack  []string
}

func (w *workload) pick() *replica {
	return w.replicas[int(w.next.Add(1))%len(w.replicas)]
}

func status(res result) (outcome, int) {
	switch {
	case res.err != nil:
		return unknown, 0
	case res.status/100 == 2:
		return ok, res.status
	case res.status >= 500:
		return unknown, res.status
	}
	return refused, res.status
}

func etagVersion(res result) uint64 {
	v, _ := strconv.ParseUint(strings.Trim(res.header.Get("ETag"), `"`), 10, 64)
	return v
}

func (w *workload) client(id int) {
	defer w.wg.Done()
	var tokens []string // created by this client, not deleted
	var revs []string   // revoked by this client, not lifted
	for i := 0; ; i++ {
		select {
		case <-w.stop:
			return
		default:
		}
		r := w.pick()
		o := op{client: id, replica: r.name, call: time.Now()}
		var res result
		switch k := i % 10; {
		case k <= 3: // read a layer, then write it with If-Match
			layer := w.layers[rand.IntN(len(w.layers))]
			res = r.do("GET", "/v1/policy/layers/"+layer, w.admin, nil)
			o.kind, o.key, o.ret = "layer-read", layer, time.Now()
			o.outcome, o.status = status(res)
			if o.outcome == ok {
				o.value = etagVersion(res)
			}
			w.hist.add(o)
			if o.outcome != ok {
				break
			}
			from := o.value
			o = op{client: id, replica: r.name, kind: "layer-cas", key: layer, from: from, call: time.Now()}
			body := map[string]any{"settings": map[string]any{"blockedMarketplaces": []map[string]string{{"source": "directory", "path": fmt.Sprintf("/c%d/%d", id, i)}}}}
			res = r.do("PUT", "/v1/policy/layers/"+layer, w.admin, body, fmt.Sprintf(`If-Match: "%d"`, from))
			o.ret = time.Now()
			o.outcome, o.status = status(res)
			switch {
			case o.outcome == ok:
				o.value = etagVersion(res)
			case res.status == http.StatusPreconditionFailed:
				var ae struct {
					Error struct{ Current string } `json:"error"`
				}
				json.Unmarshal(res.body, &ae)
				o.value, _ = strconv.ParseUint(ae.Error.Current, 10, 64)
			case o.outcome == refused:
				o.outcome = unknown // not a precondition failure: not modeled
			}
			w.hist.add(o)
		case k == 4 || (k == 5 && len(tokens) == 0):
			res = r.do("POST", "/v1/tokens", w.admin, map[string]string{"role": "agent", "note": fmt.Sprintf("c%d", id)})
			o.kind, o.ret = "token-create", time.Now()
			o.outcome, o.status = status(res)
			if o.outcome == ok {
				var t struct{ ID string }
				json.Unmarshal(res.body, &t)
				o.key = t.ID
				tokens = append(tokens, t.ID)
			}
			w.hist.add(o)
		case k == 5:
			id := tokens[0]
			res = r.do("DELETE", "/v1/tokens/"+id, w.admin, nil)
			o.kind, o.key, o.ret = "token-delete", id, time.Now()
			o.outcome, o.status = status(res)
			if o.outcome == ok || res.status == http.StatusNotFound {
				tokens = tokens[1:] // deleted (404: by an earlier try whose answer was lost)
			}
			w.hist.add(o)
		case k == 6 && i%20 == 16 && len(revs) > 0: // lift the oldest own revocation
			id := revs[0]
			res = r.do("DELETE", "/v1/revocations/"+id, w.admin, nil)
			o.kind, o.key, o.ret = "lift", id, time.Now()
			o.outcome, o.status = status(res)
			if o.outcome == ok || res.status == http.StatusNotFound {
				revs = revs[1:] // lifted (404: by an earlier try whose answer was lost)
			}
			w.hist.add(o)
		case k == 6:
			body := map[string]string{"plugin": fmt.Sprintf("p%d-%d@corp", id, i), "version": "1.0.0", "reason": "fault test"}
			res = r.do("POST", "/v1/revocations", w.admin, body)
			o.kind, o.ret = "revoke", time.Now()
			o.outcome, o.status = status(res)
			if o.outcome == ok {
				var rv struct {
					Revocation struct{ ID string } `json:"revocation"`
				}
				json.Unmarshal(res.body, &rv)
				o.key = rv.Revocation.ID
				revs = append(revs, rv.Revocation.ID)
			}
			w.hist.add(o)
		case k == 7: // list the tokens: observes which exist
			res = r.do("GET", "/v1/tokens", w.admin, nil)
			o.kind, o.ret = "token-list", time.Now()
			o.outcome, o.status = status(res)
			if o.outcome == ok {
				var toks []struct {
					ID string `json:"id"`
				}
				if err := json.Unmarshal(res.body, &toks); err != nil {
					o.outcome = unknown // unreadable: observes nothing
				}
				o.ids = map[string]bool{}
				for _, t := range toks {
					o.ids[t.ID] = true
				}
				o.complete = res.header.Get("Link") == ""
			}
			w.hist.add(o)
		case k == 8: // list the revocations: observes which are active
			res = r.do("GET", "/v1/revocations", w.admin, nil)
			o.kind, o.ret = "revocation-list", time.Now()
			o.outcome, o.status = status(res)
			if o.outcome == ok {
				var list struct {
					Revocations []struct {
						ID string `json:"id"`
					} `json:"revocations"`
					Next string `json:"next"`
				}
				if err := json.Unmarshal(res.body, &list); err != nil {
					o.outcome = unknown
				}
				o.ids = map[string]bool{}
				for _, rv := range list.Revocations {
					o.ids[rv.ID] = true
				}
				o.complete = list.Next == ""
			}
			w.hist.add(o)
		default: // an inventory report
			machine := fmt.Sprintf("m-%032x", id*1000000+i)
			rep := map[string]any{
				"machine": map[string]string{"id": machine, "hostname": fmt.Sprintf("host-%d", id)},
				"client":  map[string]string{"kind": "wharf", "version": "1.0.0"},
				"plugins": []map[string]any{{"id": "app-deploy@corp", "version": "1.0.0", "digest": "w1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "scope": "user", "install": "user", "enabled": true, "state": "active"}},
				"created": time.Now().UTC(),
			}
			res = r.do("PUT", "/v1/inventory/machines/"+machine, w.reporter, rep)
			o.kind, o.key, o.ret = "report", machine, time.Now()
			o.outcome, o.status = status(res)
			w.hist.add(o)
		}
		if res.err != nil {
			time.Sleep(20 * time.Millisecond) // no hot loop against a dead replica
		}
	}
}

// poller fetches the bundle over and over, through one replica (sticky) or
// each in turn, and records any revision lower than one it saw before.
func (w *workload) poller(name string, pick func() *replica) {
	defer w.wg.Done()
	var seen uint64
	for {
		select {
		case <-w.stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
		r := pick()
		res := r.do("GET", "/v1/policy/bundle", w.admin, nil)
		if res.err != nil || res.status != http.StatusOK {
			continue
		}
		rev, err := bundleRevision(res.body)
		w.bundleMu.Lock()
		w.bundleReads++
		if err != nil {
			w.bundleBack = append(w.bundleBack, fmt.Sprintf("%s: unreadable bundle from %s: %v", name, r.name, err))
		} else if rev < seen {
			w.bundleBack = append(w.bundleBack, fmt.Sprintf("%s: revision %d from %s after %d", name, rev, r.name, seen))
		}
		w.bundleMu.Unlock()
		seen = max(seen, rev)
	}
}

// staleness measures, while a fault lasts, how long after an acknowledged
// change each running replica still acts on the old state: a deleted token
// still accepted, and the old bundle ETag still answered with 304.
type staleness struct {
	token, bundle time.Duration
	probes        int
	failed        []string
}

func (w *workload) probe(alive []*replica, until time.Time, st *staleness) {
	for n := 0; time.Now().Before(until); n++ {
		if d, err := w.tokenStaleness(alive, n); err != nil {
			st.failed = append(st.failed, err.Error())
		} else {
			st.token = max(st.token, d)
			st.probes++
		}
		if d, err := w.bundleStaleness(alive, n); err != nil {
			st.failed = append(st.failed, err.Error())
		} else {
			st.bundle = max(st.bundle, d)
		}
	}
}

// until retries fn (a write) until it is acknowledged, for at most 30s.
func until(fn func() result) (result, time.Time, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := fn()
		if res.err == nil && res.status/100 == 2 {
			return res, time.Now(), nil
		}
		if time.Now().After(deadline) {
			return res, time.Time{}, fmt.Errorf("not acknowledged in 30s: %d %v %s", res.status, res.err, res.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// firstChange polls every replica until check holds there and returns the
// longest time from since.
func firstChange(alive []*replica, since time.Time, check func(r *replica) bool) (time.Duration, error) {
	var wg sync.WaitGroup
	worst := make([]time.Duration, len(alive))
	errs := make([]error, len(alive))
	for i, r := range alive {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(30 * time.Second)
			for !check(r) {
				if time.Now().After(deadline) {
					errs[i] = fmt.Errorf("%s still stale after 30s", r.name)
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			worst[i] = time.Since(since)
		}()
	}
	wg.Wait()
	var d time.Duration
	for i := range alive {
		if errs[i] != nil {
			return 0, errs[i]
		}
		d = max(d, worst[i])
	}
	return d, nil
}

func (w *workload) tokenStaleness(alive []*replica, n int) (time.Duration, error) {
	r := alive[n%len(alive)]
	res, _, err := until(func() result {
		return r.do("POST", "/v1/tokens", w.admin, map[string]string{"role": "agent", "note": "staleness probe"})
	})
	if err != nil {
		return 0, fmt.Errorf("probe token: %w", err)
	}
	var t struct {
		ID     string `json:"id"`
		Secret string `json:"token"`
	}
	json.Unmarshal(res.body, &t)
	works := func(r *replica) bool {
		res := r.do("GET", "/v1/policy/bundle/key", t.Secret, nil)
		return res.err == nil && res.status == http.StatusOK
	}
	for _, a := range alive { // every replica caches it
		for i := 0; i < 100 && !works(a); i++ {
			time.Sleep(20 * time.Millisecond)
		}
	}
	_, acked, err := until(func() result { return alive[(n+1)%len(alive)].do("DELETE", "/v1/tokens/"+t.ID, w.admin, nil) })
	if err != nil {
		return 0, fmt.Errorf("probe token delete: %w", err)
	}
	return firstChange(alive, acked, func(r *replica) bool {
		res := r.do("GET", "/v1/policy/bundle/key", t.Secret, nil)
		return res.err == nil && res.status == http.StatusUnauthorized
	})
}

func (w *workload) bundleStaleness(alive []*replica, n int) (time.Duration, error) {
	etags := make([]string, len(alive))
	for i, a := range alive {
		res := a.do("GET", "/v1/policy/bundle", w.admin, nil)
		if res.err != nil || res.status != http.StatusOK {
			return 0, fmt.Errorf("probe bundle from %s: %d %v", a.name, res.status, res.err)
		}
		etags[i] = res.header.Get("ETag")
	}
	body := map[string]any{"rank": 900, "settings": map[string]any{"blockedMarketplaces": []map[string]string{{"source": "directory", "path": fmt.Sprintf("/probe/%d/%d", n, time.Now().UnixNano())}}}}
	_, acked, err := until(func() result {
		return alive[(n+2)%len(alive)].do("PUT", "/v1/policy/layers/probe", w.admin, body, "If-Match: *")
	})
	if err != nil {
		return 0, fmt.Errorf("probe layer: %w", err)
	}
	idx := map[*replica]int{}
	for i, a := range alive {
		idx[a] = i
	}
	return firstChange(alive, acked, func(r *replica) bool {
		res := r.do("GET", "/v1/policy/bundle", w.admin, nil, "If-None-Match: "+etags[idx[r]])
		return res.err == nil && res.status == http.StatusOK
	})
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[min(len(ds)-1, int(p*float64(len(ds))))]
}
