//go:build unix

package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// replica is one wharf-server process over the cluster.
type replica struct {
	name  string
	bin   string
	dir   string
	store string
	admin string
	log   io.Writer

	mu   sync.Mutex
	url  string
	addr string
	cmd  *exec.Cmd
}

var urlRE = regexp.MustCompile(`"url": *"(http[^"]*)"`)

// start runs the server (again, on the same address once it has one) and
// waits until it prints its URL.
func (r *replica) start() error {
	r.mu.Lock()
	addr := r.addr
	r.mu.Unlock()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	cmd := exec.Command(r.bin, "--json", "--addr", addr, "--data", r.dir, "--demo", "",
		"--log-level", "warn", "--rate-limit", "1000000", "--store", r.store)
	cmd.Env = append(os.Environ(), "WHARF_BOOTSTRAP_TOKEN="+r.admin, "WHARF_HOME="+filepath.Join(r.dir, "home"))
	cmd.Stderr = r.log
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			if m := urlRE.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		if !sent {
			close(found)
		}
		cmd.Wait()
	}()
	select {
	case u, ok := <-found:
		if !ok {
			return fmt.Errorf("replica %s exited before it served", r.name)
		}
		r.mu.Lock()
		r.url, r.cmd = u, cmd
		r.addr = strings.TrimPrefix(u, "http://")
		r.mu.Unlock()
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		return fmt.Errorf("replica %s: no URL after 60s", r.name)
	}
	return nil
}

func (r *replica) kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		r.cmd.Process.Kill()
		r.cmd = nil
	}
}

func (r *replica) base() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.url
}

// client is an HTTP client with a per-request bound, as a load balancer or
// an agent would have.
var client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

type result struct {
	status int
	body   []byte
	header http.Header
	err    error // transport error or timeout: outcome unknown
}

func (r *replica) do(method, path, token string, body any, hdr ...string) result {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, r.base()+path, rd)
	if err != nil {
		return result{err: err}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return result{err: err}
	}
	return result{status: res.StatusCode, body: b, header: res.Header}
}

// bundleRevision reads the policy revision out of a bundle (an OPA bundle:
// gzip'd tar with data.json).
func bundleRevision(body []byte) (uint64, error) {
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			return 0, fmt.Errorf("bundle without data.json: %w", err)
		}
		if strings.TrimPrefix(h.Name, "/") != "data.json" {
			continue
		}
		var doc struct {
			Wharf struct {
				Policy struct {
					Revision uint64 `json:"revision"`
				} `json:"policy"`
			} `json:"wharf"`
		}
		if err := json.NewDecoder(tr).Decode(&doc); err != nil {
			return 0, err
		}
		return doc.Wharf.Policy.Revision, nil
	}
}
