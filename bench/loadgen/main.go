// Command loadgen sends a bounded number of HTTP requests to a server on the
// loopback interface and reports throughput, latency percentiles and errors.
// It refuses any host that is not a loopback address.
//
//	loadgen -url http://127.0.0.1:7070/v1/plugins?q=deploy -token $T -n 200000 -d 10s -c 32
//
// Several -url flags spread the requests round-robin over the servers (the
// replicas behind a load balancer), with the same total concurrency.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type result struct {
	Name     string  `json:"name"`
	Targets  int     `json:"targets"`
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	Seconds  float64 `json:"seconds"`
	RPS      float64 `json:"rps"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
	Maxms    float64 `json:"max_ms"`
	FirstErr string  `json:"first_error,omitempty"`
}

type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		targets headers // request URLs, used round-robin
		name    = flag.String("name", "", "label for the report")
		token   = flag.String("token", "", "bearer token")
		n       = flag.Int64("n", 100000, "maximum number of requests")
		dur     = flag.Duration("d", 10*time.Second, "maximum duration")
		conc    = flag.Int("c", 32, "concurrent connections")
		expect  = flag.Int("expect", 200, "the status every response must have")
		asJSON  = flag.Bool("json", false, "print the result as JSON")
		warmup  = flag.Int("warmup", 200, "requests sent before measuring")
		hdrs    headers
	)
	flag.Var(&hdrs, "H", "extra header \"Name: value\" (repeatable)")
	flag.Var(&targets, "url", "request URL (loopback only); repeat it to spread requests round-robin over several servers")
	flag.Parse()
	if len(targets) == 0 {
		return errors.New("-url is required")
	}
	for _, target := range targets {
		u, err := url.Parse(target)
		if err != nil || u.Host == "" {
			return fmt.Errorf("-url %q is not an absolute URL", target)
		}
		if ip := net.ParseIP(u.Hostname()); (ip == nil || !ip.IsLoopback()) && u.Hostname() != "localhost" {
			return fmt.Errorf("-url host %q is not a loopback address; loadgen only loads local servers", u.Hostname())
		}
	}
	if *conc < 1 || *n < 1 || *dur <= 0 {
		return errors.New("-c, -n and -d must be positive")
	}
	tr := &http.Transport{MaxIdleConns: *conc * len(targets), MaxIdleConnsPerHost: *conc, MaxConnsPerHost: *conc, DisableCompression: true}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var next atomic.Uint64
	req := func() (int, error) {
		target := targets[(next.Add(1)-1)%uint64(len(targets))]
		r, err := http.NewRequest("GET", target, nil)
		if err != nil {
			return 0, err
		}
		if *token != "" {
			r.Header.Set("Authorization", "Bearer "+*token)
		}
		for _, h := range hdrs {
			k, v, _ := strings.Cut(h, ":")
			r.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
		}
		res, err := client.Do(r)
		if err != nil {
			return 0, err
		}
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode, err
	}
	for i := 0; i < *warmup; i++ {
		if st, err := req(); err != nil || st != *expect {
			return fmt.Errorf("warm-up request: status %d, error %v (want %d)", st, err, *expect)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), *dur)
	defer cancel()
	var sent, errs atomic.Int64
	var firstErr atomic.Value
	lat := make([][]time.Duration, *conc)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < *conc; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			local := make([]time.Duration, 0, *n/int64(*conc)+1)
			for ctx.Err() == nil && sent.Add(1) <= *n {
				t0 := time.Now()
				st, err := req()
				local = append(local, time.Since(t0))
				if err != nil || st != *expect {
					errs.Add(1)
					if err == nil {
						err = fmt.Errorf("status %d, want %d", st, *expect)
					}
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
			lat[w] = local
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		i := int(p * float64(len(all)-1))
		return float64(all[i].Microseconds()) / 1000
	}
	r := result{Name: *name, Targets: len(targets), Requests: int64(len(all)), Errors: errs.Load(), Seconds: elapsed.Seconds(),
		RPS: float64(len(all)) / elapsed.Seconds(), P50ms: pct(0.50), P99ms: pct(0.99), Maxms: pct(1)}
	if v, ok := firstErr.Load().(string); ok {
		r.FirstErr = v
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	fmt.Printf("%-28s %8d req %6.2fs %9.0f req/s  p50 %6.2f ms  p99 %6.2f ms  max %7.2f ms  errors %d\n",
		r.Name, r.Requests, r.Seconds, r.RPS, r.P50ms, r.P99ms, r.Maxms, r.Errors)
	if r.FirstErr != "" {
		fmt.Printf("  first error: %s\n", r.FirstErr)
	}
	return nil
}
