package gitserver

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func gz(t testing.TB, parts ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, p := range parts { // several members: a multistream body
		w := gzip.NewWriter(&b)
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// FuzzGzipBody feeds arbitrary bytes as a gzip request body (git compresses
// larger upload-pack requests): reading it returns the inflated body or an
// error with a 4xx status, never a panic, and never more than the limit
// however well the bytes compress. Through the whole server every answer
// is 200 or a 4xx.
func FuzzGzipBody(f *testing.F) {
	const max = 4 << 10
	srv, tip := memServer(f, &Server{MaxRequestBytes: max})
	caps := " multi_ack_detailed no-done side-band-64k thin-pack ofs-delta agent=git/2.39.5\n"
	v0 := pktLines("want "+tip.String()+caps, "deepen 1\n", "0000", "done\n")
	v2 := pktLines("command=fetch", "0001", "ofs-delta", "deepen 1", "want "+tip.String()+"\n", "done\n", "0000")
	good := gz(f, v0)
	for _, seed := range []struct {
		v2   bool
		body []byte
	}{
		{false, good},
		{true, gz(f, v2)},
		{false, gz(f, v0[:20], v0[20:])},                 // two members
		{false, good[:len(good)/2]},                      // truncated
		{false, append(append([]byte{}, good...), 0, 1)}, // trailing garbage
		{false, gz(f, strings.Repeat("0", 1<<20))},       // inflates far past the limit
		{false, []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}},
		{false, []byte(v0)}, // not gzip at all
		{false, nil},
	} {
		f.Add(seed.v2, seed.body)
	}
	f.Fuzz(func(t *testing.T, v2 bool, body []byte) {
		r := httptest.NewRequest("POST", "/repo.git/git-upload-pack", bytes.NewReader(body))
		r.Header.Set("Content-Encoding", "gzip")
		b, status, err := readBody(r, max)
		if err != nil {
			if status < 400 || status >= 500 {
				t.Fatalf("error %v with status %d", err, status)
			}
		} else {
			if len(b) > max {
				t.Fatalf("accepted %d inflated bytes, more than the %d allowed", len(b), max)
			}
			// What was accepted is what gzip says the body holds.
			if zr, zerr := gzip.NewReader(bytes.NewReader(body)); zerr == nil {
				want, rerr := io.ReadAll(io.LimitReader(zr, max+1))
				if rerr == nil && !bytes.Equal(want, b) {
					t.Fatalf("inflated %q, gzip says %q", b, want)
				}
			}
		}
		w := post(t, srv, v2, bytes.NewReader(body), map[string]string{"Content-Encoding": "gzip"})
		if w.Code != http.StatusOK && (w.Code < 400 || w.Code >= 500) {
			t.Fatalf("status %d for a gzip body of %d bytes", w.Code, len(body))
		}
	})
}
