//go:build unix

// Command jepsen is wharf's fault test: it starts a 3-member etcd cluster
// (each member its own process, behind TCP proxies that can cut it off)
// and 3 wharf-server replicas over it on 127.0.0.1, drives a workload of
// policy layer writes with If-Match, layer reads, token creations,
// deletions and lists, revocations, lifts and lists, and inventory
// reports through the replicas in turn, and injects one fault after
// another: kill a follower, kill the
// leader, pause (SIGSTOP) a follower, pause the leader, cut the leader off
// from everything, kill a replica. Meanwhile it measures how long a
// replica goes on accepting a deleted token and answering 304 to an old
// bundle ETag. At the end it checks the history: no acknowledged write
// lost, each layer's history one gap-free sequence, the layers
// linearizable as compare-and-set registers and the token and revocation
// sets as sets observed by their lists (porcupine), bundle revisions
// never going back for a sticky and a round-robin poller, the audit log
// gap-free and identical on every replica.
//
//	go build -o /tmp/wharf-server ./cmd/wharf-server
//	go run ./bench/jepsen -server /tmp/wharf-server
//
// bench/jepsen.sh does both. The exit status is 1 when a check fails.
package main

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/anishathalye/porcupine"
)

func main() {
	if spec := os.Getenv(memberEnv); spec != "" {
		if err := serveMember(spec); err != nil {
			fmt.Fprintln(os.Stderr, "jepsen member:", err)
			os.Exit(1)
		}
		return
	}
	ok, err := run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

type fault struct {
	name   string
	inject func() string // returns what it did
	heal   func()
	member bool // a single etcd member fault (the 2 s target applies)
}

type row struct {
	name             string
	did              string
	stopped          time.Duration
	fivexx, errs     int
	recovery         time.Duration
	recovered        bool
	tokenStale       time.Duration
	bundleStale      time.Duration
	probes           int
	probeFailures    []string
	member           bool
	writesDuringHold int
}

func run() (bool, error) {
	bin := flag.String("server", "", "the wharf-server binary (required)")
	clients := flag.Int("clients", 12, "concurrent clients")
	hold := flag.Duration("hold", 10*time.Second, "how long each fault lasts")
	pre := flag.Duration("pre", 3*time.Second, "load before each fault")
	post := flag.Duration("post", 5*time.Second, "load after each fault heals")
	only := flag.String("faults", "", "comma-separated subset of: kill-follower,kill-leader,pause-follower,pause-leader,partition-leader,kill-replica")
	logPath := flag.String("log", "", "append the members' and replicas' stderr here (default: discarded)")
	flag.Parse()
	if *bin == "" {
		return false, fmt.Errorf("-server is required: build it with go build -o /tmp/wharf-server ./cmd/wharf-server")
	}
	var logw io.Writer = io.Discard
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return false, err
		}
		defer f.Close()
		logw = f
	}
	dir, err := os.MkdirTemp("", "wharf-jepsen-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)

	c, err := startCluster(dir, 3, logw)
	if err != nil {
		return false, fmt.Errorf("etcd: %w", err)
	}
	defer c.stop()
	var secret [16]byte
	for i := range secret {
		secret[i] = byte(rand.IntN(256))
	}
	admin := "jepsen-admin-" + hex.EncodeToString(secret[:])
	w := &workload{admin: admin, stop: make(chan struct{})}
	for i := range 3 {
		r := &replica{name: fmt.Sprintf("r%d", i), bin: *bin, dir: filepath.Join(dir, fmt.Sprintf("r%d", i)), store: c.url("/jepsen"), admin: admin, log: logw}
		if err := r.start(); err != nil {
			return false, err
		}
		defer r.kill()
		w.replicas = append(w.replicas, r)
	}
	for i := range 4 {
		w.layers = append(w.layers, fmt.Sprintf("l%d", i))
	}
	for _, l := range append(append([]string{}, w.layers...), "probe") {
		if _, _, err := until(func() result {
			return w.replicas[0].do("PUT", "/v1/policy/layers/"+l, admin, map[string]any{"rank": 500, "settings": map[string]any{}}, "If-None-Match: *")
		}); err != nil {
			return false, fmt.Errorf("create layer %s: %w", l, err)
		}
	}

	// Reports go out with a token whose quota holds every machine the run
	// reports (the admin's default quota is a person's few machines).
	res, _, err := until(func() result {
		return w.replicas[0].do("POST", "/v1/tokens", admin, map[string]any{"role": "agent", "note": "fault test reporter", "maxMachines": 1_000_000})
	})
	if err != nil {
		return false, fmt.Errorf("create the reporter token: %w", err)
	}
	var rt struct {
		Secret string `json:"token"`
	}
	if err := json.Unmarshal(res.body, &rt); err != nil || rt.Secret == "" {
		return false, fmt.Errorf("create the reporter token: unreadable answer %q", res.body)
	}
	w.reporter = rt.Secret

	t0 := time.Now()
	for i := range *clients {
		w.wg.Add(1)
		go w.client(i)
	}
	w.wg.Add(2)
	go w.poller("sticky poller", func() *replica { return w.replicas[0] })
	go w.poller("round-robin poller", w.pick)

	var victim int
	faults := []fault{
		{name: "kill-follower", member: true, inject: func() string {
			victim = (c.leader() + 1) % 3
			c.kill(victim)
			return "SIGKILL " + c.members[victim].spec.Name
		}, heal: func() { c.spawn(victim) }},
		{name: "kill-leader", member: true, inject: func() string {
			victim = c.leader()
			c.kill(victim)
			return "SIGKILL " + c.members[victim].spec.Name
		}, heal: func() { c.spawn(victim) }},
		{name: "pause-follower", member: true, inject: func() string {
			victim = (c.leader() + 1) % 3
			c.signal(victim, syscall.SIGSTOP)
			return "SIGSTOP " + c.members[victim].spec.Name
		}, heal: func() { c.signal(victim, syscall.SIGCONT) }},
		{name: "pause-leader", member: true, inject: func() string {
			victim = c.leader()
			c.signal(victim, syscall.SIGSTOP)
			return "SIGSTOP " + c.members[victim].spec.Name
		}, heal: func() { c.signal(victim, syscall.SIGCONT) }},
		{name: "partition-leader", member: true, inject: func() string {
			victim = c.leader()
			c.net.isolate(victim)
			return "cut " + c.members[victim].spec.Name + " off (peers and clients)"
		}, heal: c.net.heal},
		{name: "kill-replica", inject: func() string {
			w.replicas[2].kill()
			return "SIGKILL " + w.replicas[2].name
		}, heal: func() {
			if err := w.replicas[2].start(); err != nil {
				fmt.Fprintln(os.Stderr, "restart replica:", err)
			}
		}},
	}
	var rows []row
	for _, f := range faults {
		if *only != "" && !strings.Contains(","+*only+",", ","+f.name+",") {
			continue
		}
		if c.leader() < 0 {
			return false, fmt.Errorf("before %s: the cluster has no leader", f.name)
		}
		start := time.Now()
		time.Sleep(*pre)
		at := time.Now()
		did := f.inject()
		alive := w.replicas
		if f.name == "kill-replica" {
			alive = w.replicas[:2]
		}
		st := &staleness{}
		done := make(chan struct{})
		go func() { w.probe(alive, at.Add(*hold), st); close(done) }()
		time.Sleep(time.Until(at.Add(*hold)))
		healAt := time.Now()
		f.heal()
		<-done
		time.Sleep(*post)
		end := time.Now()
		rw := measure(w.hist.snapshot(), start, at, healAt, end)
		rw.name, rw.did, rw.member = f.name, did, f.member
		rw.tokenStale, rw.bundleStale, rw.probes, rw.probeFailures = st.token, st.bundle, st.probes, st.failed
		rows = append(rows, rw)
		fmt.Fprintf(os.Stderr, "%s (%s): writes stopped %.2fs, 5xx %d, staleness token %.2fs bundle %.2fs\n",
			f.name, did, rw.stopped.Seconds(), rw.fivexx, rw.tokenStale.Seconds(), rw.bundleStale.Seconds())
	}
	close(w.stop)
	w.wg.Wait()
	elapsed := time.Since(t0)
	ops := w.hist.snapshot()

	// Checks, on a healed cluster.
	if c.leader() < 0 {
		return false, fmt.Errorf("after the faults: the cluster has no leader")
	}
	problems := checkState(w, ops)
	nlin, lin := checkLinearizable(ops, t0)
	type setVerdict struct {
		k        setKinds
		n, reads int
		res      porcupine.CheckResult
	}
	var sets []setVerdict
	for _, k := range []setKinds{tokenSet, revocationSet} {
		n, reads, res := checkSet(ops, t0, k)
		sets = append(sets, setVerdict{k, n, reads, res})
	}

	counts := map[string]int{}
	var policyLat, tokenLat []time.Duration
	for _, o := range ops {
		if o.outcome == ok {
			counts[o.kind]++
			switch o.kind {
			case "layer-cas":
				policyLat = append(policyLat, o.ret.Sub(o.call))
			case "token-create":
				tokenLat = append(tokenLat, o.ret.Sub(o.call))
			}
		}
	}
	fmt.Printf("# wharf fault test on %s: 3 etcd members (processes, behind proxies), 3 replicas, %d clients, %s per fault, %.0fs in all\n",
		time.Now().UTC().Format("2006-01-02"), *clients, *hold, elapsed.Seconds())
	fmt.Printf("%-17s %-34s %8s %5s %6s %9s %9s %9s %6s\n", "fault", "injected", "stop s", "5xx", "errors", "recover s", "token s", "bundle s", "probes")
	pass := true
	for _, r := range rows {
		rec := fmt.Sprintf("%.2f", r.recovery.Seconds())
		if !r.recovered {
			rec = "never"
		}
		fmt.Printf("%-17s %-34s %8.2f %5d %6d %9s %9.2f %9.2f %6d\n", r.name, r.did, r.stopped.Seconds(), r.fivexx, r.errs, rec,
			r.tokenStale.Seconds(), r.bundleStale.Seconds(), r.probes)
		if r.member && r.stopped > 2*time.Second {
			fmt.Printf("  TARGET MISSED: writes stopped %.2fs > 2s\n", r.stopped.Seconds())
		}
		if r.tokenStale > time.Second || r.bundleStale > time.Second {
			fmt.Printf("  TARGET MISSED: staleness > 1s\n")
		}
		for _, pf := range r.probeFailures {
			fmt.Printf("  probe failed: %s\n", pf)
			pass = false
		}
	}
	fmt.Printf("# acknowledged: %d layer writes, %d layer reads, %d tokens created, %d deleted, %d token lists, %d revocations, %d lifted, %d revocation lists, %d reports\n",
		counts["layer-cas"], counts["layer-read"], counts["token-create"], counts["token-delete"], counts["token-list"],
		counts["revoke"], counts["lift"], counts["revocation-list"], counts["report"])
	fmt.Printf("# latency (acknowledged, whole run): policy write p50 %s p99 %s; token create p50 %s p99 %s\n",
		percentile(policyLat, .5).Round(time.Millisecond), percentile(policyLat, .99).Round(time.Millisecond),
		percentile(tokenLat, .5).Round(time.Millisecond), percentile(tokenLat, .99).Round(time.Millisecond))
	for _, r := range w.replicas {
		fmt.Printf("# %s store: %s\n", r.name, storeMetrics(r, admin))
	}
	fmt.Printf("check linearizable layers (porcupine, %d ops): %s\n", nlin, lin)
	if lin == porcupine.Illegal {
		pass = false
	}
	for _, v := range sets {
		fmt.Printf("check linearizable %s (porcupine, per id, %d ops of which %d list observations): %s\n", v.k.name, v.n, v.reads, v.res)
		if v.res == porcupine.Illegal {
			pass = false
		}
	}
	w.bundleMu.Lock()
	fmt.Printf("check bundle revisions never go back (%d bundles read): %d violations\n", w.bundleReads, len(w.bundleBack))
	for _, b := range w.bundleBack {
		fmt.Println("  ", b)
		pass = false
	}
	w.bundleMu.Unlock()
	fmt.Printf("check no lost write, layer sequences, audit gap-free and identical: %d problems\n", len(problems))
	for _, p := range problems {
		fmt.Println("  ", p)
		pass = false
	}
	if pass {
		fmt.Println("PASS")
	} else {
		fmt.Println("FAIL")
	}
	return pass, nil
}

// measure computes one fault's row from the history.
func measure(ops []op, start, at, healAt, end time.Time) row {
	var r row
	var acks []time.Time
	before := 0
	for _, o := range ops {
		if !o.write() || o.outcome != ok {
			if o.call.After(at) && o.call.Before(end) {
				if o.status >= 500 {
					r.fivexx++
				} else if o.outcome == unknown {
					r.errs++
				}
			}
			continue
		}
		switch {
		case o.ret.After(start) && o.ret.Before(at):
			before++
		case o.ret.After(at) && o.ret.Before(end):
			acks = append(acks, o.ret)
			if o.ret.Before(healAt) {
				r.writesDuringHold++
			}
		}
		if o.call.After(at) && o.call.Before(end) && o.status >= 500 {
			r.fivexx++
		}
	}
	sort.Slice(acks, func(i, j int) bool { return acks[i].Before(acks[j]) })
	prev := at
	for _, a := range acks {
		r.stopped = max(r.stopped, a.Sub(prev))
		prev = a
	}
	r.stopped = max(r.stopped, end.Sub(prev))
	// Recovery: from the heal to the first second with at least half the
	// write rate before the fault.
	rate := float64(before) / at.Sub(start).Seconds()
	for t := healAt; t.Add(time.Second).Before(end); t = t.Add(100 * time.Millisecond) {
		n := 0
		for _, a := range acks {
			if !a.Before(t) && a.Before(t.Add(time.Second)) {
				n++
			}
		}
		if float64(n) >= rate/2 {
			r.recovery, r.recovered = t.Sub(healAt), true
			break
		}
	}
	return r
}

var metricRE = regexp.MustCompile(`(?m)^(wharf_store_(?:retries|conflicts|ambiguous_commits)_total|wharf_cache_read_through_total) ([0-9.e+]+)$`)

// storeMetrics reads a replica's store counters from /metrics.
func storeMetrics(r *replica, admin string) string {
	res := r.do("GET", "/metrics", admin, nil)
	if res.err != nil || res.status != http.StatusOK {
		return fmt.Sprintf("metrics unavailable (%d %v)", res.status, res.err)
	}
	var parts []string
	for _, m := range metricRE.FindAllStringSubmatch(string(res.body), -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		parts = append(parts, fmt.Sprintf("%s=%.0f", strings.TrimPrefix(strings.TrimSuffix(m[1], "_total"), "wharf_"), v))
	}
	return strings.Join(parts, " ")
}
