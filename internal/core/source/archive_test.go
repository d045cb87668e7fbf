package source

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	netfetch "github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/plugin"
)

type zipEntry struct {
	name string
	body string
	mode fs.FileMode
	// stored skips compression (cheap for tens of thousands of entries).
	stored bool
}

func makeZip(t *testing.T, entries ...zipEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		if e.stored {
			h.Method = zip.Store
		}
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, e.body)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// serve serves fixed bodies by path on 127.0.0.1.
func serve(t *testing.T, bodies map[string][]byte) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := bodies[r.URL.EscapedPath()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func hexSHA256(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func TestFetchArchive(t *testing.T) {
	good := makeZip(t,
		zipEntry{name: ".claude-plugin/", mode: fs.ModeDir | 0o755},
		zipEntry{name: ".claude-plugin/plugin.json", body: `{"name":"z"}`},
		zipEntry{name: "bin/tool", body: "#!/bin/sh\n", mode: 0o755},
	)
	many := make([]zipEntry, DefaultMaxEntries+1)
	for i := range many {
		many[i] = zipEntry{name: fmt.Sprintf("f/%d", i), stored: true}
	}
	bodies := map[string][]byte{
		"/good.zip":      good,
		"/escape.zip":    makeZip(t, zipEntry{name: "ok.md", body: "ok"}, zipEntry{name: "../x", body: "evil"}),
		"/deep.zip":      makeZip(t, zipEntry{name: "a/b/../../../x", body: "evil"}),
		"/abs.zip":       makeZip(t, zipEntry{name: "/tmp/x", body: "evil"}),
		"/backslash.zip": makeZip(t, zipEntry{name: `..\x`, body: "evil"}),
		"/symlink.zip":   makeZip(t, zipEntry{name: "link", body: "../../etc/passwd", mode: fs.ModeSymlink | 0o777}),
		"/many.zip":      makeZip(t, many...),
		"/bomb.zip":      zipBomb(t, DefaultMaxBytes+1),
		"/notzip.zip":    []byte("<html>not a zip</html>"),
	}
	srv := serve(t, bodies)
	f := &Fetcher{}

	t.Run("ok with sha256", func(t *testing.T) {
		parent, dest := sandbox(t)
		res, err := fetchTo(t, f, plugin.Source{Kind: plugin.SourceArchive, URL: srv.URL + "/good.zip", SHA256: hexSHA256(good)}, dest)
		if err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, filepath.Join(dest, ".claude-plugin/plugin.json")); got != `{"name":"z"}` {
			t.Errorf("plugin.json = %q", got)
		}
		if fi, err := os.Stat(filepath.Join(dest, "bin/tool")); err != nil || fi.Mode()&0o100 == 0 {
			t.Errorf("bin/tool lost its exec bit: %v", err)
		}
		if res.Entries != 4 {
			t.Errorf("entries = %d, want 4 (2 dirs, 2 files)", res.Entries)
		}
		assertOnlyDest(t, parent)
	})
	cases := []struct {
		name string
		src  plugin.Source
		want error
	}{
		{"sha256 mismatch", plugin.Source{Kind: plugin.SourceArchive, URL: srv.URL + "/good.zip", SHA256: strings.Repeat("0", 64)}, ErrChecksum},
		{"bad sha256", plugin.Source{Kind: plugin.SourceArchive, URL: srv.URL + "/good.zip", SHA256: "xyz"}, ErrUnsupported},
		{"escaping entry", plugin.Source{Kind: plugin.SourceArchive, URL: srv.URL + "/escape.zip"}, ErrUnsafePath},
		{"escaping through a subdir", plugin.Source{Kind: plugin.SourceArchive, URL: srv.URL + "/deep.zip"}, ErrUnsafePath},
		{"absolute entry", plugin.Source{Kind: plugin.SourceArchive, URL: srv.URL + "/abs.zip"}, ErrUnsafePath},
		{"backslash entry", plugin.Source{Kind: plugin.SourceArchive, URL: srv.URL + "/backslash.zip"}, ErrUnsafePath},
		{"symlink entry", plugin.Source{Kind: plugin.SourceArchive, URL: srv.URL + "/symlink.zip"}, ErrLink},
		{"more than 20,000 entries", plugin.Source{Kind: plugin.SourceArchive, URL: srv.URL + "/many.zip"}, ErrTooManyEntries},
		{"more than 256 MiB uncompressed", plugin.Source{Kind: plugin.SourceArchive, URL: srv.URL + "/bomb.zip"}, ErrTooLarge},
		{"missing", plugin.Source{Kind: plugin.SourceArchive, URL: srv.URL + "/none.zip"}, ErrNotFound},
		{"plain http to a remote host", plugin.Source{Kind: plugin.SourceArchive, URL: "http://example.com/p.zip"}, ErrUnsupported},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parent, dest := sandbox(t)
			_, err := fetchTo(t, f, tc.src, dest)
			wantSourceErr(t, err, tc.want)
			assertOnlyDest(t, parent)
			if got, _ := os.ReadDir(dest); len(got) != 0 && tc.want != ErrUnsafePath {
				t.Errorf("refused archive wrote %d entries", len(got))
			}
		})
	}
	t.Run("redirect to plain http elsewhere", func(t *testing.T) {
		redir := httptest.NewServer(http.RedirectHandler("http://example.com/p.zip", http.StatusFound))
		defer redir.Close()
		parent, dest := sandbox(t)
		_, err := fetchTo(t, f, plugin.Source{Kind: plugin.SourceArchive, URL: redir.URL + "/p.zip"}, dest)
		wantSourceErr(t, err, ErrUnsupported)
		assertOnlyDest(t, parent)
	})
	t.Run("not a zip", func(t *testing.T) {
		_, dest := sandbox(t)
		_, err := fetchTo(t, f, plugin.Source{Kind: plugin.SourceArchive, URL: srv.URL + "/notzip.zip"}, dest)
		if err == nil || plugin.LayerOf(err) != plugin.LayerMaterialization {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("actual bytes are counted", func(t *testing.T) {
		// Declared sizes pass a limit that the written bytes exceed only in
		// total, so the running count must stop it.
		small := &Fetcher{Limits: Limits{MaxBytes: 1000}}
		z := makeZip(t, zipEntry{name: "a", body: strings.Repeat("a", 600)}, zipEntry{name: "b", body: strings.Repeat("b", 600)})
		srv := serve(t, map[string][]byte{"/z.zip": z})
		_, dest := sandbox(t)
		_, err := fetchTo(t, small, plugin.Source{Kind: plugin.SourceArchive, URL: srv.URL + "/z.zip"}, dest)
		wantSourceErr(t, err, ErrTooLarge)
	})
}

// zipBomb is a zip of n bytes of zeros in 1 MiB entries whose compressed
// form is computed once: about 1 KiB per MiB.
func zipBomb(t *testing.T, n int64) []byte {
	t.Helper()
	const chunk = 1 << 20
	var comp bytes.Buffer
	fw, _ := flate.NewWriter(&comp, flate.BestCompression)
	zeros := make([]byte, chunk)
	fw.Write(zeros)
	fw.Close()
	sum := crc32.ChecksumIEEE(zeros)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := 0; n > 0; i++ {
		size := int64(chunk)
		body := comp.Bytes()
		crc := sum
		if n < size {
			size = n
			var c bytes.Buffer
			w, _ := flate.NewWriter(&c, flate.BestCompression)
			w.Write(zeros[:size])
			w.Close()
			body, crc = c.Bytes(), crc32.ChecksumIEEE(zeros[:size])
		}
		w, err := zw.CreateRaw(&zip.FileHeader{Name: fmt.Sprintf("zeros/%d", i), Method: zip.Deflate,
			CRC32: crc, CompressedSize64: uint64(len(body)), UncompressedSize64: uint64(size)})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(body)
		n -= size
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type tarEntry struct {
	name, body, link string
	typ              byte
	mode             int64
}

func makeTgz(t testing.TB, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		typ, mode := e.typ, e.mode
		if typ == 0 {
			typ = tar.TypeReg
		}
		if mode == 0 {
			mode = 0o644
		}
		h := &tar.Header{Name: e.name, Typeflag: typ, Mode: mode, Size: int64(len(e.body)), Linkname: e.link}
		if typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, e.body)
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func sri512(b []byte) string {
	s := sha512.Sum512(b)
	return "sha512-" + base64.StdEncoding.EncodeToString(s[:])
}

// npmRegistry serves packument JSON and tarballs on 127.0.0.1.
func npmRegistry(t *testing.T, pkgs map[string]map[string]any, tarballs map[string][]byte) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := tarballs[r.URL.Path]; ok {
			w.Write(b)
			return
		}
		meta, ok := pkgs[r.URL.EscapedPath()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		b, _ := json.Marshal(meta)
		w.Write([]byte(strings.ReplaceAll(string(b), "REGISTRY", srv.URL)))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestFetchNPM(t *testing.T) {
	v1 := makeTgz(t,
		tarEntry{name: "package/package.json", body: `{"name":"@acme/tools","version":"1.0.0"}`},
		tarEntry{name: "package/.claude-plugin/plugin.json", body: `{"name":"tools"}`},
		tarEntry{name: "package/bin/cli.js", body: "#!/usr/bin/env node\n", mode: 0o755},
	)
	v2 := makeTgz(t, tarEntry{name: "package/package.json", body: `{"version":"2.0.0"}`})
	evilLink := makeTgz(t, tarEntry{name: "package/x", typ: tar.TypeSymlink, link: "../../../etc/passwd"})
	evilHard := makeTgz(t, tarEntry{name: "package/x", typ: tar.TypeLink, link: "/etc/passwd"})
	evilDots := makeTgz(t, tarEntry{name: "package/../../x", body: "evil"})
	evilAbs := makeTgz(t, tarEntry{name: "/etc/cron.d/x", body: "evil"})
	sha1v2 := sha1.Sum(v2)
	dist := func(tarball, integrity, shasum string) map[string]any {
		return map[string]any{"tarball": "REGISTRY" + tarball, "integrity": integrity, "shasum": shasum}
	}
	pkgs := map[string]map[string]any{
		"/@acme%2ftools": {
			"dist-tags": map[string]string{"latest": "1.0.0", "next": "2.0.0"},
			"versions": map[string]any{
				"1.0.0": map[string]any{"version": "1.0.0", "dist": dist("/t/v1.tgz", sri512(v1), "")},
				"2.0.0": map[string]any{"version": "2.0.0", "dist": dist("/t/v2.tgz", "", hex.EncodeToString(sha1v2[:]))},
				"3.0.0": map[string]any{"version": "3.0.0", "dist": dist("/t/v1.tgz", sri512(v2), "")},
			},
		},
		"/evil": {
			"dist-tags": map[string]string{"latest": "1.0.0"},
			"versions": map[string]any{
				"1.0.0": map[string]any{"dist": dist("/t/link.tgz", "", "")},
				"1.0.1": map[string]any{"dist": dist("/t/hard.tgz", "", "")},
				"1.0.2": map[string]any{"dist": dist("/t/dots.tgz", "", "")},
				"1.0.3": map[string]any{"dist": dist("/t/abs.tgz", "", "")},
			},
		},
	}
	tarballs := map[string][]byte{"/t/v1.tgz": v1, "/t/v2.tgz": v2, "/t/link.tgz": evilLink, "/t/hard.tgz": evilHard, "/t/dots.tgz": evilDots, "/t/abs.tgz": evilAbs}
	srv := npmRegistry(t, pkgs, tarballs)
	f := &Fetcher{Net: netfetch.Config{NPMRegistry: srv.URL}}

	t.Run("latest with sha512 integrity", func(t *testing.T) {
		parent, dest := sandbox(t)
		res, err := fetchTo(t, f, plugin.Source{Kind: plugin.SourceNPM, Package: "@acme/tools"}, dest)
		if err != nil {
			t.Fatal(err)
		}
		if res.Version != "1.0.0" {
			t.Errorf("version = %q, want 1.0.0 (latest)", res.Version)
		}
		if got := readFile(t, filepath.Join(dest, ".claude-plugin/plugin.json")); got != `{"name":"tools"}` {
			t.Errorf("plugin.json = %q (the package/ prefix must be stripped)", got)
		}
		if fi, err := os.Stat(filepath.Join(dest, "bin/cli.js")); err != nil || fi.Mode()&0o100 == 0 {
			t.Errorf("bin/cli.js lost its exec bit: %v", err)
		}
		assertOnlyDest(t, parent)
	})
	t.Run("dist-tag with legacy shasum, registry on the source", func(t *testing.T) {
		_, dest := sandbox(t)
		res, err := fetchTo(t, &Fetcher{}, plugin.Source{Kind: plugin.SourceNPM, Package: "@acme/tools", Version: "next", Registry: srv.URL}, dest)
		if err != nil || res.Version != "2.0.0" {
			t.Fatalf("res = %+v, %v", res, err)
		}
	})
	cases := []struct {
		name string
		src  plugin.Source
		want error
	}{
		{"integrity mismatch", plugin.Source{Kind: plugin.SourceNPM, Package: "@acme/tools", Version: "3.0.0"}, ErrChecksum},
		{"missing version", plugin.Source{Kind: plugin.SourceNPM, Package: "@acme/tools", Version: "9.9.9"}, ErrNotFound},
		{"version range", plugin.Source{Kind: plugin.SourceNPM, Package: "@acme/tools", Version: "^1.0.0"}, ErrUnsupported},
		{"missing package", plugin.Source{Kind: plugin.SourceNPM, Package: "nope"}, ErrNotFound},
		{"bad package name", plugin.Source{Kind: plugin.SourceNPM, Package: "../../x"}, ErrUnsupported},
		{"symlink entry", plugin.Source{Kind: plugin.SourceNPM, Package: "evil", Version: "1.0.0"}, ErrLink},
		{"hard link entry", plugin.Source{Kind: plugin.SourceNPM, Package: "evil", Version: "1.0.1"}, ErrLink},
		{"dot-dot entry", plugin.Source{Kind: plugin.SourceNPM, Package: "evil", Version: "1.0.2"}, ErrUnsafePath},
		{"absolute entry", plugin.Source{Kind: plugin.SourceNPM, Package: "evil", Version: "1.0.3"}, ErrUnsafePath},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parent, dest := sandbox(t)
			_, err := fetchTo(t, f, tc.src, dest)
			wantSourceErr(t, err, tc.want)
			assertOnlyDest(t, parent)
		})
	}
	t.Run("too many entries", func(t *testing.T) {
		small := &Fetcher{Net: netfetch.Config{NPMRegistry: srv.URL}, Limits: Limits{MaxEntries: 2}}
		_, dest := sandbox(t)
		_, err := fetchTo(t, small, plugin.Source{Kind: plugin.SourceNPM, Package: "@acme/tools"}, dest)
		wantSourceErr(t, err, ErrTooManyEntries)
	})
}
