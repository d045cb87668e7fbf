package gitserver

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/memory"
)

// memRepo builds a small in-memory repository: two commits on main.
func memRepo(t testing.TB) (*memory.Storage, plumbing.Hash) {
	t.Helper()
	st := memory.NewStorage()
	var parent []plumbing.Hash
	var tip plumbing.Hash
	for i := 0; i < 2; i++ {
		blob := st.NewEncodedObject()
		blob.SetType(plumbing.BlobObject)
		w, _ := blob.Writer()
		fmt.Fprintf(w, "content %d\n", i)
		w.Close()
		bh, err := st.SetEncodedObject(blob)
		if err != nil {
			t.Fatal(err)
		}
		tree := &object.Tree{Entries: []object.TreeEntry{{Name: "a.txt", Mode: 0o100644, Hash: bh}}}
		to := st.NewEncodedObject()
		if err := tree.Encode(to); err != nil {
			t.Fatal(err)
		}
		th, _ := st.SetEncodedObject(to)
		sig := object.Signature{Name: "w", Email: "w@example.invalid", When: time.Unix(1700000000+int64(i), 0).UTC()}
		c := &object.Commit{Author: sig, Committer: sig, Message: "c\n", TreeHash: th, ParentHashes: parent}
		co := st.NewEncodedObject()
		if err := c.Encode(co); err != nil {
			t.Fatal(err)
		}
		tip, _ = st.SetEncodedObject(co)
		parent = []plumbing.Hash{tip}
	}
	_ = st.SetReference(plumbing.NewHashReference("refs/heads/main", tip))
	_ = st.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, "refs/heads/main"))
	return st, tip
}

func memServer(t testing.TB, srv *Server) (*Server, plumbing.Hash) {
	st, tip := memRepo(t)
	srv.Open = func(ctx context.Context, name string) (storage.Storer, error) {
		if name != "repo" {
			return nil, fmt.Errorf("%q: %w", name, ErrNotFound)
		}
		return st, nil
	}
	return srv, tip
}

func pktLines(lines ...string) string {
	var b strings.Builder
	for _, l := range lines {
		switch l {
		case "0000", "0001":
			b.WriteString(l)
		default:
			fmt.Fprintf(&b, "%04x%s", len(l)+4, l)
		}
	}
	return b.String()
}

func post(t testing.TB, h http.Handler, v2 bool, body io.Reader, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest("POST", "/repo.git/git-upload-pack", body)
	r.Header.Set("Content-Type", "application/x-git-upload-pack-request")
	if v2 {
		r.Header.Set("Git-Protocol", "version=2")
	}
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestHostileRequestsGetProtocolErrors(t *testing.T) {
	srv, tip := memServer(t, &Server{})
	want := "want " + tip.String() + "\n"
	cases := []struct {
		name string
		v2   bool
		body string
		err  string // expected in the ERR line
	}{
		{"garbage", false, "hello, world", "not four hex digits"},
		{"garbage v2", true, "\x00\x01\x02\x03garbage", "not four hex digits"},
		{"truncated line", false, "00ffwant", "runs past the end"},
		{"length 3", true, "0003", "invalid length"},
		{"no flush", false, pktLines(want), "ended before the flush"},
		{"no wants", false, pktLines("0000", "done\n"), "no want lines"},
		{"bad want id", false, pktLines("want nothex\n", "0000", "done\n"), "not 40 hex"},
		{"unknown want", false, pktLines("want "+strings.Repeat("ab", 20)+"\n", "0000", "done\n"), "not our ref"},
		{"unknown want v2", true, pktLines("command=fetch\n", "0001", "want "+strings.Repeat("ab", 20)+"\n", "done\n", "0000"), "not our ref"},
		{"unknown line", false, pktLines(want, "frobnicate\n", "0000", "done\n"), "unknown upload-pack request line"},
		{"unknown command", true, pktLines("command=rm-rf\n", "0000"), "unknown command"},
		{"not a command", true, pktLines("fetch\n", "0000"), "command=NAME"},
		{"unknown fetch arg", true, pktLines("command=fetch\n", "0001", want, "filter blob:none\n", "done\n", "0000"), "unknown or unsupported fetch argument"},
		{"too deep", false, pktLines(want, "deepen 99999999999\n", "0000", "done\n"), "deeper than"},
		{"negative deepen", true, pktLines("command=fetch\n", "0001", want, "deepen -1\n", "done\n", "0000"), "positive number"},
		{"sha256", true, pktLines("command=ls-refs\n", "object-format=sha256\n", "0000"), "unsupported object-format=sha256"},
		{"deepen and deepen-since", true, pktLines("command=fetch\n", "0001", want, "deepen 1\n", "deepen-since 1700000000\n", "done\n", "0000"), "cannot be combined"},
		{"deepen-not unknown ref", false, pktLines(want, "deepen-not nope\n", "0000", "done\n"), "no such ref"},
		{"deepen-since excludes the want", true, pktLines("command=fetch\n", "0001", want, "deepen-since 1900000000\n", "done\n", "0000"), "excludes wanted commit"},
		{"data after done", false, pktLines(want, "0000", "done\n", "have "+tip.String()+"\n"), "data after done"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := post(t, srv, c.v2, strings.NewReader(c.body), nil)
			if w.Code != http.StatusOK {
				t.Fatalf("status %d, want 200 with an ERR pkt-line; body %q", w.Code, w.Body)
			}
			b := w.Body.String()
			if !strings.HasPrefix(b[min(4, len(b)):], "ERR ") || !strings.Contains(b, c.err) {
				t.Fatalf("answer %q, want an ERR pkt-line mentioning %q", b, c.err)
			}
		})
	}
}

func TestHTTPFaultsGet4xx(t *testing.T) {
	srv, tip := memServer(t, &Server{MaxRequestBytes: 1024})
	big := pktLines("want "+tip.String()+"\n", "0000") + strings.Repeat(pktLines("have "+tip.String()+"\n"), 100) + "0009done\n"

	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write(bytes.Repeat([]byte("0000"), 1<<20))
	zw.Close()

	if w := post(t, srv, false, strings.NewReader(big), nil); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: %d, want 413", w.Code)
	}
	if w := post(t, srv, false, &bomb, map[string]string{"Content-Encoding": "gzip"}); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("gzip bomb: %d, want 413", w.Code)
	}
	var noisy bytes.Buffer
	zw = gzip.NewWriter(&noisy)
	rnd := make([]byte, 4096)
	for i := range rnd {
		rnd[i] = byte(i*7919 ^ i>>3)
	}
	zw.Write(rnd)
	zw.Close()
	if w := post(t, srv, false, &noisy, map[string]string{"Content-Encoding": "gzip"}); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("compressed body over the limit: %d %q, want 413", w.Code, w.Body)
	}
	if w := post(t, srv, false, strings.NewReader("not gzip"), map[string]string{"Content-Encoding": "gzip"}); w.Code != http.StatusBadRequest {
		t.Errorf("bad gzip: %d, want 400", w.Code)
	}
	if w := post(t, srv, false, strings.NewReader("0000"), map[string]string{"Content-Encoding": "br"}); w.Code != http.StatusUnsupportedMediaType {
		t.Errorf("brotli: %d, want 415", w.Code)
	}
	if w := post(t, srv, false, strings.NewReader("0000"), map[string]string{"Content-Type": "text/plain"}); w.Code != http.StatusUnsupportedMediaType {
		t.Errorf("wrong content type: %d, want 415", w.Code)
	}
	for _, c := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/repo.git/git-upload-pack", http.StatusMethodNotAllowed},
		{"POST", "/repo.git/info/refs?service=git-upload-pack", http.StatusMethodNotAllowed},
		{"GET", "/repo.git/info/refs", http.StatusForbidden},
		{"GET", "/repo.git/info/refs?service=git-frob", http.StatusForbidden},
		{"GET", "/repo.git/objects/info/packs", http.StatusNotFound},
		{"GET", "/", http.StatusNotFound},
		{"GET", "/..%2f/info/refs?service=git-upload-pack", http.StatusNotFound},
		{"GET", "/other.git/info/refs?service=git-upload-pack", http.StatusNotFound},
		{"GET", "/repo/info/refs?service=git-upload-pack", http.StatusOK},
	} {
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest(c.method, c.path, nil))
		if w.Code != c.code {
			t.Errorf("%s %s: %d %q, want %d", c.method, c.path, w.Code, w.Body, c.code)
		}
	}
}

func TestNoOpenIs500(t *testing.T) {
	w := httptest.NewRecorder()
	(&Server{}).ServeHTTP(w, httptest.NewRequest("GET", "/repo.git/info/refs?service=git-upload-pack", nil))
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("%d %q, want 500", w.Code, w.Body)
	}
}

func TestOpenFailureIs500(t *testing.T) {
	srv := &Server{Open: func(ctx context.Context, name string) (storage.Storer, error) {
		return nil, errors.New("disk on fire")
	}}
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest("GET", "/repo.git/info/refs?service=git-upload-pack", nil))
	if w.Code != http.StatusInternalServerError || !strings.Contains(w.Body.String(), "disk on fire") {
		t.Fatalf("%d %q, want 500 naming the cause", w.Code, w.Body)
	}
}

// TestSlowBodyTimesOut sends the headers and part of the body, then stalls:
// the server answers 408 once Timeout has passed instead of waiting.
func TestSlowBodyTimesOut(t *testing.T) {
	srv, _ := memServer(t, &Server{Timeout: 200 * time.Millisecond})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	conn, err := net.Dial("tcp", hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /repo.git/git-upload-pack HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-git-upload-pack-request\r\nContent-Length: 1000\r\n\r\n0032want ")
	// A guard against a hang, far above Timeout; not a timing assertion.
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("stalled body: %d %q, want 408", resp.StatusCode, body)
	}
}

func TestV2LsRefs(t *testing.T) {
	srv, tip := memServer(t, &Server{})
	w := post(t, srv, true, strings.NewReader(pktLines("command=ls-refs\n", "0001", "symrefs\n", "peel\n", "ref-prefix HEAD\n", "0000")), nil)
	want := pktLines(tip.String()+" HEAD symref-target:refs/heads/main\n", "0000")
	if w.Body.String() != want {
		t.Fatalf("ls-refs HEAD: %q, want %q", w.Body, want)
	}
	w = post(t, srv, true, strings.NewReader(pktLines("command=ls-refs\n", "0001", "ref-prefix refs/tags/\n", "0000")), nil)
	if w.Body.String() != "0000" {
		t.Fatalf("ls-refs with no match: %q, want a bare flush", w.Body)
	}
}

func TestEmptyRepositoryAdvertisesCapabilities(t *testing.T) {
	srv := &Server{Open: func(ctx context.Context, name string) (storage.Storer, error) {
		return memory.NewStorage(), nil
	}}
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest("GET", "/repo.git/info/refs?service=git-upload-pack", nil))
	if !strings.Contains(w.Body.String(), strings.Repeat("0", 40)+" capabilities^{}\x00") {
		t.Fatalf("empty repo advertisement %q lacks the capabilities^{} line", w.Body)
	}
	_ = git.ErrRepositoryNotExists
}
