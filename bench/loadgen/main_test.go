package main

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestClientReadsEveryResponseShape sends requests over one connection to a
// real net/http server answering with every body framing it uses: a
// Content-Length body, a chunked body (larger than net/http buffers), an
// empty 304, and a response that closes the connection.
func TestClientReadsEveryResponseShape(t *testing.T) {
	big := strings.Repeat("x", 100_000)
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer secret" || r.Header.Get("If-None-Match") != `"v1"` {
			http.Error(w, "missing header", http.StatusBadRequest)
			return
		}
		switch r.URL.Path {
		case "/small":
			w.Write([]byte("hello"))
		case "/big":
			w.Write([]byte(big))
		case "/304":
			w.Header().Set("ETag", `"v1"`)
			w.WriteHeader(http.StatusNotModified)
		case "/close":
			w.Header().Set("Connection", "close")
			w.Write([]byte("bye"))
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	var targets []target
	paths := []string{"/small", "/big", "/304", "/small", "/close", "/small"}
	for _, p := range paths {
		u, _ := url.Parse(srv.URL + p)
		req, err := requestBytes(u, "secret", []string{`If-None-Match: "v1"`})
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, target{addr: u.Host, req: req})
	}
	cl := &client{targets: targets, conns: make([]*conn, len(targets)), timeout: 10 * time.Second}
	defer cl.close()
	want := []int{200, 200, 304, 200, 200, 200}
	for i := range paths {
		st, err := cl.do(i)
		if err != nil || st != want[i] {
			t.Fatalf("%s: status %d, error %v; want %d", paths[i], st, err, want[i])
		}
	}
	// Every target kept its own connection, except /close which dropped it.
	if cl.conns[4] != nil {
		t.Errorf("the connection answered with Connection: close was kept")
	}
	for i, c := range cl.conns {
		if i != 4 && c == nil {
			t.Errorf("%s: keep-alive connection was dropped", paths[i])
		}
	}
	// A second round reuses the kept connections and redials /close.
	for i := range paths {
		if st, err := cl.do(i); err != nil || st != want[i] {
			t.Fatalf("%s (second round): status %d, error %v", paths[i], st, err)
		}
	}
	srv.Close()
	if conns.Load() != int32(len(paths)+1) {
		t.Errorf("%d connections opened, want %d (one per target, one more for /close)", conns.Load(), len(paths)+1)
	}
}

func TestRequestBytesRefusesBadHeaders(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1/x?q=1")
	for _, h := range []string{"NoColon", ": empty name", "X: a\r\nInjected: b"} {
		if _, err := requestBytes(u, "", []string{h}); err == nil {
			t.Errorf("-H %q accepted", h)
		}
	}
	b, err := requestBytes(u, "tok", []string{"If-None-Match: \"e\""})
	if err != nil {
		t.Fatal(err)
	}
	want := "GET /x?q=1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\nUser-Agent: wharf-loadgen\r\nAuthorization: Bearer tok\r\nIf-None-Match: \"e\"\r\n\r\n"
	if string(b) != want {
		t.Errorf("request:\n%q\nwant\n%q", b, want)
	}
}

func TestReadResponseRefusesMalformed(t *testing.T) {
	for _, raw := range []string{
		"",
		"garbage\r\n\r\n",
		"HTTP/1.1 2x0 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nNoColon\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
	} {
		if _, _, err := readResponse(bufio.NewReader(strings.NewReader(raw))); err == nil {
			t.Errorf("%q: no error", raw)
		}
	}
}

// FuzzReadResponse: any bytes from a server give a status or an error,
// never a panic.
func FuzzReadResponse(f *testing.F) {
	f.Add([]byte("HTTP/1.1 304 Not Modified\r\nEtag: \"x\"\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n"))
	f.Add([]byte("HTTP/1.0 200 OK\r\n\r\nbody to the end"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		readResponse(bufio.NewReaderSize(strings.NewReader(string(raw)), 16))
	})
}
