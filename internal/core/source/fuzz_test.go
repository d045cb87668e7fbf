package source

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func rawTar(entries ...tarEntry) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Typeflag: typ, Mode: 0o644, Linkname: e.link}
		if typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		tw.WriteHeader(h)
		io.WriteString(tw, e.body)
	}
	tw.Close()
	return buf.Bytes()
}

// FuzzExtractTar feeds arbitrary tar streams to the extractor: it must
// never panic and never create anything outside the destination.
func FuzzExtractTar(f *testing.F) {
	f.Add(rawTar(tarEntry{name: "package/a.md", body: "a"}, tarEntry{name: "package/d/", typ: tar.TypeDir}))
	f.Add(rawTar(tarEntry{name: "package/../../x", body: "x"}))
	f.Add(rawTar(tarEntry{name: "package/l", typ: tar.TypeSymlink, link: "../../x"}))
	f.Add(rawTar(tarEntry{name: "/abs", body: "x"}))
	f.Add(rawTar(tarEntry{name: "package/a", body: "1"}, tarEntry{name: "package/a/b", body: "2"}))
	f.Fuzz(func(t *testing.T, data []byte) {
		parent := t.TempDir()
		dest := filepath.Join(parent, "dest")
		os.Mkdir(dest, 0o755)
		tr, err := newTree(dest, Limits{MaxEntries: 100, MaxBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.close()
		if err := extractTar(tar.NewReader(bytes.NewReader(data)), tr, true); err == nil {
			if err := tr.verifyLinks(); err != nil {
				t.Fatalf("extractTar wrote a link that verifyLinks refuses: %v", err)
			}
		}
		ents, _ := os.ReadDir(parent)
		if len(ents) != 1 {
			t.Fatalf("extraction wrote outside the destination: %v", ents)
		}
	})
}

// FuzzExtractZip does the same for zip archives.
func FuzzExtractZip(f *testing.F) {
	for _, entries := range [][]zipEntry{
		{{name: "a.md", body: "a"}, {name: "d/", mode: os.ModeDir | 0o755}},
		{{name: "../x", body: "x"}},
		{{name: "l", body: "../x", mode: os.ModeSymlink | 0o777}},
	} {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for _, e := range entries {
			h := &zip.FileHeader{Name: e.name}
			if e.mode != 0 {
				h.SetMode(e.mode)
			}
			w, _ := zw.CreateHeader(h)
			io.WriteString(w, e.body)
		}
		zw.Close()
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		parent := t.TempDir()
		dest := filepath.Join(parent, "dest")
		os.Mkdir(dest, 0o755)
		tr, err := newTree(dest, Limits{MaxEntries: 100, MaxBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.close()
		extractZip(zr, tr)
		ents, _ := os.ReadDir(parent)
		if len(ents) != 1 {
			t.Fatalf("extraction wrote outside the destination: %v", ents)
		}
	})
}
