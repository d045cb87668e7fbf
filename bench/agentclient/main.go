// Command agentclient measures request round trips over the stdio protocol
// of `wharf agent serve --stdio`: it starts the server, sends -n requests of
// one subtype with at most -inflight outstanding, checks that every request
// got exactly one success response with its id, and prints the rate.
//
//	agentclient -wharf ./wharf -n 5000 -inflight 1 -subtype list_components -- --project DIR
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"time"
)

func main() {
	bin := flag.String("wharf", "wharf", "the wharf binary")
	n := flag.Int("n", 2000, "requests to send")
	inflight := flag.Int("inflight", 1, "requests outstanding at once (1 = strict round trips)")
	subtype := flag.String("subtype", "list_components", "request subtype")
	flag.Parse()
	if err := run(*bin, *n, *inflight, *subtype, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "agentclient:", err)
		os.Exit(1)
	}
}

func run(bin string, n, inflight int, subtype string, extra []string) error {
	cmd := exec.Command(bin, append([]string{"agent", "serve", "--stdio", "--no-mcp"}, extra...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	w := bufio.NewWriter(stdin)
	r := bufio.NewScanner(stdout)
	r.Buffer(nil, 64<<20)
	var resp struct {
		Response struct {
			Subtype   string `json:"subtype"`
			RequestID string `json:"request_id"`
			Error     string `json:"error"`
		} `json:"response"`
	}
	// Warm up: the startup load happens before the first answer.
	fmt.Fprintf(w, `{"type":"control_request","request_id":"warm","request":{"subtype":"initialize"}}`+"\n")
	w.Flush()
	if !r.Scan() {
		return fmt.Errorf("no response to initialize")
	}
	seen := make(map[string]bool, n)
	sent, got := 0, 0
	start := time.Now()
	for got < n {
		for sent < n && sent-got < inflight {
			fmt.Fprintf(w, `{"type":"control_request","request_id":"r%d","request":{"subtype":%q}}`+"\n", sent, subtype)
			sent++
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if !r.Scan() {
			return fmt.Errorf("server closed stdout after %d responses", got)
		}
		if err := json.Unmarshal(r.Bytes(), &resp); err != nil {
			return err
		}
		if resp.Response.Subtype != "success" || seen[resp.Response.RequestID] {
			return fmt.Errorf("bad or duplicate response: %s", r.Text())
		}
		seen[resp.Response.RequestID] = true
		got++
	}
	el := time.Since(start)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		return err
	}
	fmt.Printf("%s: %d requests, inflight %d: %.0f req/s, %.1f µs per request (bytes per response %d)\n",
		subtype, n, inflight, float64(n)/el.Seconds(), float64(el.Microseconds())/float64(n), len(r.Bytes()))
	return nil
}
