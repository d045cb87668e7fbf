// Command inventoryflood floods a wharf server's fleet inventory from one
// token, as a leaked or hostile agent token would: for -duration, -c
// workers send inventory reports as fast as the server answers. Half of
// them make up a new machine id for every report; the other half report
// one machine again and again, each time with -plugins new plugin ids. It
// The one machine reports first, so that it holds the token's machine (an
// agent token is one machine by default) and its churn is measured. It
// prints one JSON line: reports sent and the answers by status, and the
// distinct machine and plugin ids it offered.
//
//	inventoryflood -url http://127.0.0.1:7070 -token AGENT -duration 60s
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The report as a client sends it (docs/server.md, "Fleet inventory"),
// written out here so that the benchmark is a client from outside.
type report struct {
	Machine machine   `json:"machine"`
	Client  client    `json:"client"`
	Plugins []plugin  `json:"plugins"`
	Created time.Time `json:"created"`
}

type machine struct {
	ID       string `json:"id"`
	Hostname string `json:"hostname,omitempty"`
}

type client struct {
	Kind    string `json:"kind"`
	Version string `json:"version"`
}

type plugin struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	Scope   string `json:"scope"`
	Install string `json:"install"`
	Enabled bool   `json:"enabled"`
	State   string `json:"state"`
}

// maxPlugins is the most plugins one report may list.
const maxPlugins = 2000

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "inventoryflood:", err)
		os.Exit(1)
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func run() error {
	url := flag.String("url", "", "server URL")
	token := flag.String("token", "", "the one token every report is sent with")
	duration := flag.Duration("duration", 60*time.Second, "how long to flood")
	conc := flag.Int("c", 8, "workers")
	plugins := flag.Int("plugins", 75, "plugin ids per report of a new machine, new in every report")
	churn := flag.Int("churn", maxPlugins, "plugin ids per report of the one machine, new in every report")
	flag.Parse()
	if *url == "" || *token == "" {
		return fmt.Errorf("-url and -token are required")
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *conc}, Timeout: 30 * time.Second}
	deadline := time.Now().Add(*duration)
	var mu sync.Mutex
	statuses := map[int]int{}
	var sent, machines, pluginIDs atomic.Int64
	var wg sync.WaitGroup
	fixed := "m-" + randHex(16)
	send := func(id string, n int) int {
		rep := report{Machine: machine{ID: id, Hostname: "flood"}, Client: client{Kind: "wharf", Version: "1.0.0"}, Created: time.Now()}
		for range n {
			rep.Plugins = append(rep.Plugins, plugin{ID: "p" + randHex(8) + "@flood", Version: "1.0.0",
				Scope: "user", Install: "user", Enabled: true, State: "active"})
		}
		pluginIDs.Add(int64(n))
		raw, _ := json.Marshal(rep)
		req, _ := http.NewRequest(http.MethodPut, *url+"/v1/inventory/machines/"+id, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+*token)
		req.Header.Set("Content-Type", "application/json")
		res, err := hc.Do(req)
		code := 0
		if err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			code = res.StatusCode
		}
		sent.Add(1)
		mu.Lock()
		statuses[code]++
		mu.Unlock()
		return code
	}
	machines.Add(1)
	send(fixed, *churn)
	for w := range *conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				id, n := fixed, *churn
				if w%2 == 0 {
					id, n = "m-"+randHex(16), *plugins
					machines.Add(1)
				}
				if code := send(id, n); code == http.StatusTooManyRequests || code == 0 {
					time.Sleep(2 * time.Millisecond) // no busy loop; an attacker gains nothing by waiting less
				}
			}
		}()
	}
	wg.Wait()
	codes := make([]int, 0, len(statuses))
	for c := range statuses {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	byStatus := map[string]int{}
	for _, c := range codes {
		byStatus[strconv.Itoa(c)] = statuses[c]
	}
	out, _ := json.Marshal(map[string]any{"phase": "flood", "seconds": duration.Seconds(), "workers": *conc, "reports": sent.Load(),
		"by_status": byStatus, "machine_ids_offered": machines.Load(), "plugin_ids_offered": pluginIDs.Load()})
	fmt.Println(string(out))
	return nil
}
