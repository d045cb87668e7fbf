// Command fleetbench measures the fleet inventory: simulated machines report
// their inventories to several wharf API replicas (api.Server, each with its
// own etcd client and its own 127.0.0.1 listener, in this process) over one
// etcd cluster, over real HTTP.
//
// It prints, as one JSON object per phase:
//
//   - first reports (every machine new): reports/s, p50/p99 latency;
//
//   - unchanged reports (each machine again, through another replica):
//     reports/s, p99, and the etcd revisions they caused (each committed
//     write transaction is one revision: 0 means no store write);
//
//   - "who has X" for a plugin on a fixed set of machines, timed at each
//     fleet size given in -checkpoints;
//
//   - store bytes per machine (keys and values of the inventory buckets) and
//     etcd's database size.
//
//     fleetbench -store etcd://127.0.0.1:2379/wharf-fleet -machines 100000 -plugins 20
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/api"
	"github.com/wharfhq/wharf/internal/server/etcdstore"
	"github.com/wharfhq/wharf/internal/server/fleet"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fleetbench:", err)
		os.Exit(1)
	}
}

type config struct {
	store       string
	machines    int
	plugins     int
	pool        int
	replicas    int
	conc        int
	needle      int
	checkpoints []int
	queries     int
	etcdPID     int
	persist     time.Duration
	rounds      int
}

func run() error {
	var c config
	var cps string
	flag.StringVar(&c.store, "store", "", "etcd://host:port[,host:port]/prefix")
	flag.IntVar(&c.machines, "machines", 10000, "simulated machines")
	flag.IntVar(&c.plugins, "plugins", 20, "plugins per machine")
	flag.IntVar(&c.pool, "pool", 500, "distinct plugins the machines draw from")
	flag.IntVar(&c.replicas, "replicas", 3, "API replicas")
	flag.IntVar(&c.conc, "c", 32, "concurrent reporting clients")
	flag.IntVar(&c.needle, "needle", 100, "machines that have the plugin asked about (the fixed answer size)")
	flag.StringVar(&cps, "checkpoints", "", "fleet sizes at which to time who-has (default: 10% and 100% of -machines)")
	flag.IntVar(&c.queries, "queries", 30, "who-has queries timed at each checkpoint")
	flag.DurationVar(&c.persist, "persist-seen", 5*time.Minute, "how often an unchanged report may persist the last-seen time (fleet.Options.PersistSeenEvery)")
	flag.IntVar(&c.rounds, "rounds", 3, "rounds of unchanged reports")
	flag.IntVar(&c.etcdPID, "etcd-pid", 0, "the etcd process, whose CPU time is counted with this one's (Linux)")
	flag.Parse()
	if c.store == "" {
		return errors.New("-store is required")
	}
	if cps == "" {
		c.checkpoints = []int{max(c.needle, c.machines/10), c.machines}
	} else {
		for _, s := range strings.Split(cps, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < c.needle || n > c.machines {
				return fmt.Errorf("checkpoint %q: a fleet size from -needle to -machines", s)
			}
			c.checkpoints = append(c.checkpoints, n)
		}
	}
	endpoints, prefix, err := etcdstore.ParseURL(c.store)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The replicas: one etcd client and one listener each.
	var servers []*api.Server
	var urls []string
	for i := 0; i < c.replicas; i++ {
		st, err := etcdstore.Open(endpoints, etcdstore.Options{Prefix: prefix})
		if err != nil {
			return err
		}
		defer st.Close()
		srv, err := api.New(api.Deps{Store: st, RateLimit: -1, Inventory: fleet.Options{PersistSeenEvery: c.persist}})
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		go srv.Serve(ctx, ln, time.Second)
		servers = append(servers, srv)
		urls = append(urls, "http://"+ln.Addr().String())
	}
	admin := "fleetbench-admin-" + strconv.FormatUint(rand.Uint64(), 16)
	st0, err := etcdstore.Open(endpoints, etcdstore.Options{Prefix: prefix})
	if err != nil {
		return err
	}
	defer st0.Close()
	if _, _, err := api.EnsureAdminToken(st0, admin, time.Now()); err != nil {
		return err
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c.conc, MaxIdleConns: c.conc * c.replicas}, Timeout: 60 * time.Second}
	// One agent token for the whole simulated fleet, as an admin sets it
	// up: a quota of that many machines.
	agent, err := createToken(hc, urls[0], admin, c.machines)
	if err != nil {
		return err
	}
	ec, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer ec.Close()

	fmt.Printf(`{"phase":"setup","machines":%d,"plugins_per_machine":%d,"pool":%d,"replicas":%d,"etcd_members":%d,"concurrency":%d,"needle_machines":%d}`+"\n",
		c.machines, c.plugins, c.pool, c.replicas, len(endpoints), c.conc, c.needle)

	// First reports, in order of machine number, timing who-has at each
	// checkpoint; machines 0..needle-1 carry needle@bench.
	done := 0
	var firstLat []time.Duration
	var firstDur, firstCPU time.Duration
	for _, cp := range c.checkpoints {
		if cp <= done {
			continue
		}
		t0, cpu0 := time.Now(), cpuTime(c.etcdPID)
		lat, errs, err := reportRange(hc, urls, agent, c, done, cp, 0)
		if err != nil {
			return err
		}
		firstDur += time.Since(t0)
		firstCPU += cpuTime(c.etcdPID) - cpu0
		firstLat = append(firstLat, lat...)
		if errs > 0 {
			return fmt.Errorf("%d first reports failed", errs)
		}
		done = cp
		if err := compact(ctx, ec); err != nil {
			return err
		}
		q, err := whoHas(hc, urls, admin, c)
		if err != nil {
			return err
		}
		fmt.Printf(`{"phase":"who-has","fleet":%d,"answer":%d,"p50_ms":%.3f,"p99_ms":%.3f,"min_ms":%.3f}`+"\n",
			cp, c.needle, ms(pct(q, 50)), ms(pct(q, 99)), ms(pct(q, 0)))
	}
	fmt.Printf(`{"phase":"first-reports","reports":%d,"reports_per_s":%.0f,"p50_ms":%.2f,"p99_ms":%.2f,"cpu_ms_per_report":%.2f}`+"\n",
		len(firstLat), float64(len(firstLat))/firstDur.Seconds(), ms(pct(firstLat, 50)), ms(pct(firstLat, 99)), ms(firstCPU)/float64(max(1, len(firstLat))))

	// Unchanged reports, each through the next replica.
	for round := 1; round <= c.rounds; round++ {
		before := stats(servers)
		rev0, err := revision(ctx, ec)
		if err != nil {
			return err
		}
		t0, cpu0 := time.Now(), cpuTime(c.etcdPID)
		lat, errs, err := reportRange(hc, urls, agent, c, 0, c.machines, round)
		if err != nil {
			return err
		}
		d := time.Since(t0)
		cpu := cpuTime(c.etcdPID) - cpu0
		rev1, err := revision(ctx, ec)
		if err != nil {
			return err
		}
		after := stats(servers)
		fmt.Printf(`{"phase":"unchanged-reports","round":%d,"reports":%d,"errors":%d,"reports_per_s":%.0f,"p50_ms":%.2f,"p99_ms":%.2f,"cpu_ms_per_report":%.2f,"etcd_revisions":%d,"changed":%d,"seen_writes":%d,"touches":%d}`+"\n",
			round, len(lat), errs, float64(len(lat))/d.Seconds(), ms(pct(lat, 50)), ms(pct(lat, 99)), ms(cpu)/float64(max(1, len(lat))), rev1-rev0,
			after.Changed-before.Changed, after.SeenWrites-before.SeenWrites, after.Touches-before.Touches)
	}

	// Store bytes per machine.
	var logical int64
	buckets := []string{fleet.BucketMachines, fleet.BucketCounts, fleet.BucketSeen}
	plugins, err := (fleet.Open(st0, fleet.Options{})).Plugins()
	if err != nil {
		return err
	}
	for _, p := range plugins {
		buckets = append(buckets, fleet.IndexBucket(p.Plugin))
	}
	for _, b := range buckets {
		err := st0.View(func(r store.Reader) error {
			after := ""
			for {
				kvs, err := r.ListAfter(b, after, 5000)
				if err != nil {
					return err
				}
				for _, kv := range kvs {
					logical += int64(len(prefix) + len(b) + 2 + len(kv.Key) + len(kv.Value))
				}
				if len(kvs) < 5000 {
					return nil
				}
				after = kvs[len(kvs)-1].Key
			}
		})
		if err != nil {
			return err
		}
	}
	if err := compact(ctx, ec); err != nil {
		return err
	}
	var dbSize int64
	for _, ep := range endpoints {
		if _, err := ec.Defragment(ctx, ep); err != nil {
			return err
		}
		s, err := ec.Status(ctx, ep)
		if err != nil {
			return err
		}
		dbSize = max(dbSize, s.DbSize)
	}
	fmt.Printf(`{"phase":"store","machines":%d,"logical_bytes_per_machine":%d,"etcd_db_bytes":%d,"etcd_db_bytes_per_machine":%d}`+"\n",
		c.machines, logical/int64(c.machines), dbSize, dbSize/int64(c.machines))
	return nil
}

func createToken(hc *http.Client, url, admin string, machines int) (string, error) {
	req, _ := http.NewRequest("POST", url+"/v1/tokens", strings.NewReader(fmt.Sprintf(`{"role":"agent","maxMachines":%d}`, machines)))
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	res, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var out struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || out.Token == "" {
		return "", fmt.Errorf("create token: %d %v", res.StatusCode, err)
	}
	return out.Token, nil
}

// reportOf is machine n's inventory: plugins drawn from the pool by a
// generator seeded with n (the same every time), needle@bench on the first
// c.needle machines.
func reportOf(c config, n int) inventory.Report {
	r := rand.New(rand.NewPCG(uint64(n), 7))
	picked := map[int]bool{}
	var ps []inventory.Plugin
	if n < c.needle {
		ps = append(ps, plugin("needle@bench", "1.0.0"))
	}
	for len(ps) < c.plugins {
		k := r.IntN(c.pool)
		if picked[k] {
			continue
		}
		picked[k] = true
		ps = append(ps, plugin(fmt.Sprintf("p%04d@bench", k), fmt.Sprintf("1.%d.0", r.IntN(3))))
	}
	return inventory.Report{Machine: inventory.Machine{ID: fmt.Sprintf("m-%032x", n), Hostname: fmt.Sprintf("host-%d", n), User: "dev", OS: "linux/amd64"},
		Client: inventory.Client{Kind: inventory.KindWharf, Version: "1.0.0"}, Plugins: ps, Created: time.Now()}
}

func plugin(id, version string) inventory.Plugin {
	return inventory.Plugin{ID: id, Version: version, Digest: "w1:" + strings.Repeat("A", 43) + "=", Scope: "user",
		Install: inventory.InstallUser, Enabled: true, State: inventory.StateActive}
}

// reportRange sends the reports of machines [from, to), machine n through
// replica (n+shift) mod replicas, with c.conc workers.
func reportRange(hc *http.Client, urls []string, token string, c config, from, to, shift int) ([]time.Duration, int, error) {
	var next atomic.Int64
	next.Store(int64(from))
	lats := make([][]time.Duration, c.conc)
	var errs atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < c.conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := int(next.Add(1) - 1)
				if n >= to {
					return
				}
				rep := reportOf(c, n)
				body, _ := json.Marshal(rep)
				url := urls[(n+shift)%len(urls)] + "/v1/inventory/machines/" + rep.Machine.ID
				t0 := time.Now()
				req, _ := http.NewRequest("PUT", url, bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				res, err := hc.Do(req)
				if err == nil {
					raw, _ := io.ReadAll(res.Body)
					res.Body.Close()
					if res.StatusCode != 200 {
						err = fmt.Errorf("%s: %d %s", rep.Machine.ID, res.StatusCode, raw)
					}
				}
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				lats[w] = append(lats[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		fmt.Fprintln(os.Stderr, "fleetbench: first error:", e)
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	return all, int(errs.Load()), nil
}

// whoHas times GET /v1/inventory/plugins/bench/needle, checking the answer.
func whoHas(hc *http.Client, urls []string, admin string, c config) ([]time.Duration, error) {
	var out []time.Duration
	for i := 0; i < c.queries; i++ {
		req, _ := http.NewRequest("GET", urls[i%len(urls)]+"/v1/inventory/plugins/bench/needle?limit=1000", nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		t0 := time.Now()
		res, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		var pm api.PluginMachines
		err = json.NewDecoder(res.Body).Decode(&pm)
		res.Body.Close()
		d := time.Since(t0)
		if err != nil || res.StatusCode != 200 {
			return nil, fmt.Errorf("who-has: %d %v", res.StatusCode, err)
		}
		if len(pm.Machines) != c.needle || pm.Plugin.Machines != c.needle {
			return nil, fmt.Errorf("who-has answered %d machines (counts %d), want %d", len(pm.Machines), pm.Plugin.Machines, c.needle)
		}
		out = append(out, d)
	}
	return out, nil
}

func stats(servers []*api.Server) fleet.Stats {
	var t fleet.Stats
	for _, s := range servers {
		st := s.InventoryStats()
		t.Reports += st.Reports
		t.Changed += st.Changed
		t.Touches += st.Touches
		t.SeenWrites += st.SeenWrites
		t.Txs += st.Txs
	}
	return t
}

func revision(ctx context.Context, ec *clientv3.Client) (int64, error) {
	res, err := ec.Get(ctx, "/fleetbench-probe")
	if err != nil {
		return 0, err
	}
	return res.Header.Revision, nil
}

// compact drops etcd's history so the database holds the current state
// (etcd keeps every revision until compacted).
func compact(ctx context.Context, ec *clientv3.Client) error {
	rev, err := revision(ctx, ec)
	if err != nil {
		return err
	}
	_, err = ec.Compact(ctx, rev, clientv3.WithCompactPhysical())
	if errors.Is(err, rpctypes.ErrCompacted) {
		return nil // nothing was written since the last compaction
	}
	return err
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s) - 1) * p / 100
	return s[i]
}

// cpuTime is the user and system CPU time of this process and of the etcd
// process pid (0: none), from /proc (Linux; 0 elsewhere).
func cpuTime(pid int) time.Duration {
	var total time.Duration
	for _, p := range []string{"self", strconv.Itoa(pid)} {
		if p == "0" {
			continue
		}
		raw, err := os.ReadFile("/proc/" + p + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command name (which may hold spaces): utime is
		// the 14th field of the line, stime the 15th.
		rest := string(raw[bytes.LastIndexByte(raw, ')')+2:])
		f := strings.Fields(rest)
		if len(f) < 13 {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(ut+st) * (time.Second / 100) // USER_HZ
	}
	return total
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
