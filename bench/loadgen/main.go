// Command loadgen sends a bounded number of HTTP requests to a server on the
// loopback interface and reports throughput, latency percentiles and errors.
// It refuses any host that is not a loopback address.
//
//	loadgen -url http://127.0.0.1:7070/v1/plugins?q=deploy -token $T -n 200000 -d 10s -c 32
//
// Several -url flags spread the requests round-robin over the servers (the
// replicas behind a load balancer), with the same total concurrency.
//
// Like wrk, it keeps one HTTP/1.1 keep-alive connection per worker and
// target, writes a request prepared once and reads the response with a
// minimal parser (status line, Content-Length or chunked body, Connection:
// close). It shares the cores with the server it loads, so its own cost per
// request is kept small: net/http's client costs more CPU per request than
// the servers measured here, which would make every server look alike.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
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

// target is one server: its address and the request bytes sent to it.
type target struct {
	addr string
	req  []byte
}

// requestBytes is the HTTP/1.1 GET request for u with the given headers.
func requestBytes(u *url.URL, token string, hdrs []string) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: wharf-loadgen\r\n", u.RequestURI(), u.Host)
	if token != "" {
		fmt.Fprintf(&b, "Authorization: Bearer %s\r\n", token)
	}
	for _, h := range hdrs {
		k, v, ok := strings.Cut(h, ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || strings.ContainsAny(k+v, "\r\n") {
			return nil, fmt.Errorf("-H %q is not \"Name: value\"", h)
		}
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n")
	return b.Bytes(), nil
}

// conn is one keep-alive connection to a target.
type conn struct {
	c  net.Conn
	br *bufio.Reader
}

// client sends requests over its own connections, one per target; it is
// used by one goroutine.
type client struct {
	targets []target
	conns   []*conn
	timeout time.Duration
}

// do sends one request to target i and reads the whole response; it
// returns the status code.
func (cl *client) do(i int) (int, error) {
	t := cl.targets[i]
	cn := cl.conns[i]
	if cn == nil {
		c, err := net.DialTimeout("tcp", t.addr, cl.timeout)
		if err != nil {
			return 0, err
		}
		cn = &conn{c: c, br: bufio.NewReaderSize(c, 16<<10)}
		cl.conns[i] = cn
	}
	status, keep, err := cn.roundTrip(t.req, cl.timeout)
	if err != nil || !keep {
		cn.c.Close()
		cl.conns[i] = nil
	}
	return status, err
}

func (cl *client) close() {
	for _, cn := range cl.conns {
		if cn != nil {
			cn.c.Close()
		}
	}
}

func (cn *conn) roundTrip(req []byte, timeout time.Duration) (status int, keep bool, err error) {
	if timeout > 0 {
		cn.c.SetDeadline(time.Now().Add(timeout))
	}
	if _, err := cn.c.Write(req); err != nil {
		return 0, false, err
	}
	return readResponse(cn.br)
}

// readResponse reads one HTTP/1.x response to a GET and discards its body.
// keep says whether the connection can carry another request.
func readResponse(br *bufio.Reader) (status int, keep bool, err error) {
	line, err := readLine(br)
	if err != nil {
		return 0, false, err
	}
	// HTTP/1.1 200 OK
	proto, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok || !bytes.HasPrefix(proto, []byte("HTTP/1.")) || len(rest) < 3 {
		return 0, false, fmt.Errorf("malformed status line %q", line)
	}
	for _, d := range rest[:3] {
		if d < '0' || d > '9' {
			return 0, false, fmt.Errorf("malformed status line %q", line)
		}
		status = status*10 + int(d-'0')
	}
	if status < 100 {
		return 0, false, fmt.Errorf("malformed status line %q", line)
	}
	keep = string(proto) != "HTTP/1.0"
	length, chunked := int64(-1), false
	for {
		h, err := readLine(br)
		if err != nil {
			return status, false, err
		}
		if len(h) == 0 {
			break
		}
		k, v, ok := bytes.Cut(h, []byte{':'})
		if !ok {
			return status, false, fmt.Errorf("malformed header line %q", h)
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			if length, err = strconv.ParseInt(string(v), 10, 64); err != nil || length < 0 {
				return status, false, fmt.Errorf("malformed Content-Length %q", v)
			}
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(v, []byte("chunked"))
		case bytes.EqualFold(k, []byte("Connection")):
			if bytes.EqualFold(v, []byte("close")) {
				keep = false
			} else if bytes.EqualFold(v, []byte("keep-alive")) {
				keep = true
			}
		}
	}
	switch {
	case status == 204 || status == 304 || status < 200:
		return status, keep, nil
	case chunked:
		return status, keep, discardChunked(br)
	case length >= 0:
		_, err := br.Discard(int(length))
		return status, keep, err
	default: // the body runs to the end of the connection
		_, err := io.Copy(io.Discard, br)
		return status, false, err
	}
}

func discardChunked(br *bufio.Reader) error {
	for {
		line, err := readLine(br)
		if err != nil {
			return err
		}
		size, _, _ := bytes.Cut(line, []byte{';'})
		n, err := strconv.ParseInt(string(bytes.TrimSpace(size)), 16, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("malformed chunk size %q", line)
		}
		if n == 0 {
			for { // trailers, then the empty line
				t, err := readLine(br)
				if err != nil || len(t) == 0 {
					return err
				}
			}
		}
		if _, err := br.Discard(int(n)); err != nil {
			return err
		}
		if crlf, err := readLine(br); err != nil || len(crlf) != 0 {
			return errors.Join(err, errors.New("chunk not followed by CRLF"))
		}
	}
}

// readLine reads one CRLF-terminated line, without it. The slice is valid
// until the next read from br.
func readLine(br *bufio.Reader) ([]byte, error) {
	b, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errors.New("response line longer than the read buffer")
		}
		return nil, err
	}
	return bytes.TrimSuffix(b[:len(b)-1], []byte{'\r'}), nil
}

func run() error {
	var (
		urls   headers // request URLs, used round-robin
		name   = flag.String("name", "", "label for the report")
		token  = flag.String("token", "", "bearer token")
		n      = flag.Int64("n", 100000, "maximum number of requests")
		dur    = flag.Duration("d", 10*time.Second, "maximum duration")
		conc   = flag.Int("c", 32, "concurrent requests (workers; each keeps one connection per target)")
		expect = flag.Int("expect", 200, "the status every response must have")
		asJSON = flag.Bool("json", false, "print the result as JSON")
		warmup = flag.Int("warmup", 200, "requests sent before measuring")
		hdrs   headers
	)
	flag.Var(&hdrs, "H", "extra header \"Name: value\" (repeatable)")
	flag.Var(&urls, "url", "request URL (loopback only); repeat it to spread requests round-robin over several servers")
	flag.Parse()
	if len(urls) == 0 {
		return errors.New("-url is required")
	}
	var targets []target
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || u.Scheme != "http" {
			return fmt.Errorf("-url %q is not an absolute http:// URL", raw)
		}
		if ip := net.ParseIP(u.Hostname()); (ip == nil || !ip.IsLoopback()) && u.Hostname() != "localhost" {
			return fmt.Errorf("-url host %q is not a loopback address; loadgen only loads local servers", u.Hostname())
		}
		addr := u.Host
		if u.Port() == "" {
			addr = net.JoinHostPort(u.Hostname(), "80")
		}
		req, err := requestBytes(u, *token, hdrs)
		if err != nil {
			return err
		}
		targets = append(targets, target{addr: addr, req: req})
	}
	if *conc < 1 || *n < 1 || *dur <= 0 {
		return errors.New("-c, -n and -d must be positive")
	}
	const timeout = 10 * time.Second
	newClient := func() *client {
		return &client{targets: targets, conns: make([]*conn, len(targets)), timeout: timeout}
	}
	// Requests go round-robin over the targets, whichever worker sends them.
	var next atomic.Uint64
	pick := func() int { return int((next.Add(1) - 1) % uint64(len(targets))) }

	warm := newClient()
	for i := 0; i < *warmup; i++ {
		if st, err := warm.do(pick()); err != nil || st != *expect {
			warm.close()
			return fmt.Errorf("warm-up request: status %d, error %v (want %d)", st, err, *expect)
		}
	}
	warm.close()

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
			cl := newClient()
			defer cl.close()
			local := make([]time.Duration, 0, *n/int64(*conc)+1)
			for ctx.Err() == nil && sent.Add(1) <= *n {
				t0 := time.Now()
				st, err := cl.do(pick())
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
	slices.Sort(all)
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
