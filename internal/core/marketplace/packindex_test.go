package marketplace

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/memory"
)

// goGitIndex is the .idx go-git's storage writes for pack: its own parser
// and index writer over the same bytes.
func goGitIndex(t *testing.T, pack []byte) []byte {
	t.Helper()
	w := new(idxfile.Writer)
	p, err := packfile.NewParser(packfile.NewScanner(bytes.NewReader(pack)), w)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Parse(); err != nil {
		t.Fatalf("go-git cannot parse the pack: %v", err)
	}
	idx, err := w.Index()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := idxfile.NewEncoder(&b).Encode(idx); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// packDeltas counts the delta entries of pack.
func packDeltas(t *testing.T, pack []byte) int {
	t.Helper()
	s := packfile.NewScanner(bytes.NewReader(pack))
	_, n, err := s.Header()
	if err != nil {
		t.Fatal(err)
	}
	deltas := 0
	for range n {
		oh, err := s.NextObjectHeader()
		if err != nil {
			t.Fatal(err)
		}
		if oh.Type.IsDelta() {
			deltas++
		}
		if _, _, err := s.NextObject(io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	return deltas
}

// objectsOf is every object of the repository at dir: hash, type and
// content.
func objectsOf(t *testing.T, dir string) map[plumbing.Hash]string {
	t.Helper()
	r, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	iter, err := r.Storer.IterEncodedObjects(plumbing.AnyObject)
	if err != nil {
		t.Fatal(err)
	}
	out := map[plumbing.Hash]string{}
	err = iter.ForEach(func(o plumbing.EncodedObject) error {
		rd, err := o.Reader()
		if err != nil {
			return err
		}
		defer rd.Close()
		b, err := io.ReadAll(rd)
		out[o.Hash()] = o.Type().String() + " " + string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// packFiles is the files of objects/pack of the clone at dir, by name.
func packFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	pd := filepath.Join(dir, ".git", "objects", "pack")
	ents, err := os.ReadDir(pd)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o444 {
			t.Errorf("%s: mode %v, go-git's storage leaves 0444", e.Name(), fi.Mode().Perm())
		}
		b, err := os.ReadFile(filepath.Join(pd, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// TestCloneEqualsGoGitClone: an add (wharf's pack indexer, and the
// checkout made as the pack comes) leaves the work tree, index and
// objects of go-git's own clone and checkout: the same objects, one pack
// named by its checksum with the .idx go-git writes for it, nothing else
// in objects/pack.
func TestCloneEqualsGoGitClone(t *testing.T) {
	repo := trickyRepo(t)
	m, _ := newTestManager(t, Options{})
	k, err := m.Add(context.Background(), gitSource(t, repo.url()), "")
	if err != nil {
		t.Fatal(err)
	}
	plain := plainClone(t, repo.url())
	assertSameCheckout(t, k.InstallLocation, plain)

	got, want := objectsOf(t, k.InstallLocation), objectsOf(t, plain)
	if len(got) != len(want) {
		t.Errorf("%d objects, go-git's clone %d", len(got), len(want))
	}
	for h, w := range want {
		if g, ok := got[h]; !ok {
			t.Errorf("object %s (%.30q) missing", h, w)
		} else if g != w {
			t.Errorf("object %s: %.30q, go-git: %.30q", h, g, w)
		}
	}

	files := packFiles(t, k.InstallLocation)
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) != 2 || !strings.HasSuffix(names[0], ".idx") || strings.TrimSuffix(names[0], ".idx")+".pack" != names[1] {
		t.Fatalf("objects/pack holds %v, want one pack and its index", names)
	}
	pack := files[names[1]]
	if sum := pack[len(pack)-20:]; "pack-"+plumbing.Hash(sum).String()+".pack" != names[1] {
		t.Errorf("pack named %s, its checksum is %x", names[1], sum)
	}
	if !bytes.Equal(files[names[0]], goGitIndex(t, pack)) {
		t.Error("the .idx differs from the one go-git writes for the same pack")
	}
	if packDeltas(t, pack) == 0 {
		t.Error("the pack holds no delta: the test checks no delta resolution")
	}
}

// testSink records what the indexer decodes.
type testSink map[plumbing.Hash]string

func (s testSink) object(h plumbing.Hash, t plumbing.ObjectType, content []byte) error {
	s[h] = t.String() + " " + string(content)
	return nil
}

// rawObject is one entry of a hand-made pack.
type rawObject struct {
	typ  plumbing.ObjectType
	data []byte // content, or delta
	base int    // an OFS delta's base: index of an earlier entry
	ref  plumbing.Hash
	size int // the size its header gives, if not len(data)
}

// makePack writes objs as a pack, in order, with its checksum.
func makePack(t *testing.T, objs []rawObject) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("PACK")
	_ = binary.Write(&b, binary.BigEndian, uint32(2))
	_ = binary.Write(&b, binary.BigEndian, uint32(len(objs)))
	offs := make([]int64, len(objs))
	for i, o := range objs {
		offs[i] = int64(b.Len())
		size := len(o.data)
		if o.size != 0 {
			size = o.size
		}
		c := byte(o.typ)<<4 | byte(size&15)
		size >>= 4
		for size > 0 {
			b.WriteByte(c | 0x80)
			c = byte(size & 0x7f)
			size >>= 7
		}
		b.WriteByte(c)
		switch o.typ {
		case plumbing.OFSDeltaObject:
			rel := offs[i] - offs[o.base]
			enc := []byte{byte(rel & 0x7f)}
			for rel >>= 7; rel > 0; rel >>= 7 {
				rel--
				enc = append([]byte{byte(0x80 | rel&0x7f)}, enc...)
			}
			b.Write(enc)
		case plumbing.REFDeltaObject:
			b.Write(o.ref[:])
		}
		zw := zlib.NewWriter(&b)
		_, _ = zw.Write(o.data)
		_ = zw.Close()
	}
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}

func blobHash(content []byte) plumbing.Hash {
	return plumbing.ComputeHash(plumbing.BlobObject, content)
}

// runIndexer indexes pack into a new pack directory and returns the
// directory, the decoded objects and the error.
func runIndexer(t *testing.T, pack []byte) (string, testSink, error) {
	t.Helper()
	dir := t.TempDir()
	tmp, err := os.CreateTemp(dir, "tmp_pack_")
	if err != nil {
		t.Fatal(err)
	}
	sink := testSink{}
	// Small writes, as the network gives them.
	r := io.MultiReader(bytes.NewReader(pack[:min(len(pack), 7)]), bytes.NewReader(pack[min(len(pack), 7):]))
	err = indexPack(r, tmp, dir, sink)
	return dir, sink, err
}

// TestIndexPackEqualsGoGitIndex: wharf's indexer writes, for packs with
// offset deltas, ref deltas, a delta before its base and a delta chain,
// the pack's bytes and the .idx go-git's indexer writes, and decodes
// every object to its content.
func TestIndexPackEqualsGoGitIndex(t *testing.T) {
	base := []byte(strings.Repeat("line of a plugin file\n", 200))
	v1 := append(bytes.Clone(base), "one more\n"...)
	v2 := append(bytes.Clone(v1), "and another\n"...)
	d1 := packfile.DiffDelta(base, v1)
	d2 := packfile.DiffDelta(v1, v2)
	repoObjs := func(useRef bool) []byte {
		s := memory.NewStorage()
		var hs []plumbing.Hash
		for i := range 30 {
			o := s.NewEncodedObject()
			o.SetType(plumbing.BlobObject)
			w, _ := o.Writer()
			_, _ = w.Write(append(bytes.Clone(base), strings.Repeat("x", i)...))
			_ = w.Close()
			h, err := s.SetEncodedObject(o)
			if err != nil {
				t.Fatal(err)
			}
			hs = append(hs, h)
		}
		var b bytes.Buffer
		if _, err := packfile.NewEncoder(&b, s, useRef).Encode(hs, 10); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	cases := []struct {
		name string
		pack []byte
		want map[plumbing.Hash][]byte // blobs the pack must decode to; nil: not checked
	}{
		{"go-git offset deltas", repoObjs(false), nil},
		{"go-git ref deltas", repoObjs(true), nil},
		{"ref delta before its base", makePack(t, []rawObject{
			{typ: plumbing.REFDeltaObject, data: d1, ref: blobHash(base)},
			{typ: plumbing.BlobObject, data: base},
		}), map[plumbing.Hash][]byte{blobHash(base): base, blobHash(v1): v1}},
		{"offset delta on a ref delta before its base", makePack(t, []rawObject{
			{typ: plumbing.REFDeltaObject, data: d1, ref: blobHash(base)},
			{typ: plumbing.OFSDeltaObject, data: d2, base: 0},
			{typ: plumbing.BlobObject, data: base},
		}), map[plumbing.Hash][]byte{blobHash(base): base, blobHash(v1): v1, blobHash(v2): v2}},
		{"delta chain", makePack(t, []rawObject{
			{typ: plumbing.BlobObject, data: base},
			{typ: plumbing.OFSDeltaObject, data: d1, base: 0},
			{typ: plumbing.OFSDeltaObject, data: d2, base: 1},
		}), map[plumbing.Hash][]byte{blobHash(base): base, blobHash(v1): v1, blobHash(v2): v2}},
		{"empty blob", makePack(t, []rawObject{{typ: plumbing.BlobObject, data: nil}}),
			map[plumbing.Hash][]byte{blobHash(nil): nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == nil && packDeltas(t, tc.pack) == 0 {
				t.Fatal("go-git's encoder made no delta: the case checks nothing")
			}
			dir, sink, err := runIndexer(t, tc.pack)
			if err != nil {
				t.Fatal(err)
			}
			sum := plumbing.Hash(tc.pack[len(tc.pack)-20:])
			base := filepath.Join(dir, "pack-"+sum.String())
			gotPack, err := os.ReadFile(base + ".pack")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gotPack, tc.pack) {
				t.Error("the saved pack differs from the one received")
			}
			gotIdx, err := os.ReadFile(base + ".idx")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gotIdx, goGitIndex(t, tc.pack)) {
				t.Error("the .idx differs from go-git's")
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 2 {
				t.Errorf("pack directory holds %d files, want the pack and its index", len(ents))
			}
			// Every object decoded, to what go-git reads from the pack.
			ms := memory.NewStorage()
			if err := packfile.UpdateObjectStorage(ms, bytes.NewReader(tc.pack)); err != nil {
				t.Fatal(err)
			}
			iter, _ := ms.IterEncodedObjects(plumbing.AnyObject)
			n := 0
			_ = iter.ForEach(func(o plumbing.EncodedObject) error {
				n++
				rd, _ := o.Reader()
				b, _ := io.ReadAll(rd)
				if got, want := sink[o.Hash()], o.Type().String()+" "+string(b); got != want {
					t.Errorf("object %s decoded as %.30q, go-git: %.30q", o.Hash(), got, want)
				}
				return nil
			})
			if n != len(sink) {
				t.Errorf("%d objects decoded, go-git %d", len(sink), n)
			}
			for h, c := range tc.want {
				if sink[h] != "blob "+string(c) {
					t.Errorf("blob %s not decoded", h)
				}
			}
		})
	}
}

// TestIndexPackRefusesBadPacks: a truncated pack, a bad checksum, a
// corrupt object, a delta on an object not in the pack or on no object,
// an object longer than its header says, a bad signature: each is an
// error, and nothing is left in the pack directory.
func TestIndexPackRefusesBadPacks(t *testing.T) {
	base := []byte(strings.Repeat("line\n", 100))
	v1 := append(bytes.Clone(base), "more\n"...)
	good := makePack(t, []rawObject{
		{typ: plumbing.BlobObject, data: base},
		{typ: plumbing.OFSDeltaObject, data: packfile.DiffDelta(base, v1), base: 0},
	})
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		return b
	}
	cases := map[string][]byte{
		"bad checksum":            flip(len(good) - 1),
		"corrupt object":          flip(20),
		"bad signature":           flip(0),
		"version 9":               append(append([]byte("PACK"), 0, 0, 0, 9), good[8:]...),
		"header only":             good[:12],
		"missing ref base":        makePack(t, []rawObject{{typ: plumbing.REFDeltaObject, data: packfile.DiffDelta(base, v1), ref: blobHash([]byte("elsewhere"))}}),
		"longer than its header":  makePack(t, []rawObject{{typ: plumbing.BlobObject, data: base, size: 7}}),
		"shorter than its header": makePack(t, []rawObject{{typ: plumbing.BlobObject, data: base, size: 700}}),
		"bad delta": makePack(t, []rawObject{
			{typ: plumbing.BlobObject, data: base},
			{typ: plumbing.OFSDeltaObject, data: []byte{0xff, 0x01, 0x02}, base: 0},
		}),
	}
	for _, cut := range []int{11, 13, 30, len(good) / 2, len(good) - 21, len(good) - 1} {
		cases["truncated at "+strconv.Itoa(cut)] = good[:cut]
	}
	for name, pack := range cases {
		t.Run(name, func(t *testing.T) {
			dir, _, err := runIndexer(t, pack)
			if err == nil {
				t.Fatal("no error")
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("left in the pack directory: %v", ents)
			}
			t.Log(err)
		})
	}
	// An empty stream (nothing to fetch) saves nothing and is no error.
	dir, _, err := runIndexer(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in the pack directory: %v", ents)
	}
}

// TestStreamCheckoutAnyOrder: the checkout made as the pack comes leaves
// what go-git's checkout leaves whatever order the objects come in:
// trees before their blobs (git's order), blobs first (each read from the
// pack at the end), by hash, with a second commit (the streamed files
// removed and the checkout made afresh), and with a tree that never comes
// (the same, from the pack).
func TestStreamCheckoutAnyOrder(t *testing.T) {
	repo := trickyRepo(t)
	plain := plainClone(t, repo.url())
	r, err := git.PlainOpen(plain)
	if err != nil {
		t.Fatal(err)
	}
	head, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	type obj struct {
		h plumbing.Hash
		t plumbing.ObjectType
		b []byte
	}
	var all []obj
	iter, _ := r.Storer.IterEncodedObjects(plumbing.AnyObject)
	_ = iter.ForEach(func(o plumbing.EncodedObject) error {
		rd, _ := o.Reader()
		b, _ := io.ReadAll(rd)
		all = append(all, obj{o.Hash(), o.Type(), b})
		return nil
	})
	byType := func(first ...plumbing.ObjectType) []obj {
		var out []obj
		for _, t := range first {
			for _, o := range all {
				if o.t == t {
					out = append(out, o)
				}
			}
		}
		return out
	}
	other := obj{h: plumbing.NewHash("1111111111111111111111111111111111111111"), t: plumbing.CommitObject,
		b: []byte("tree 4b825dc642cb6eb9a060e54bf8d69288fbbd7363\nauthor x <x@x> 1 +0000\ncommitter x <x@x> 1 +0000\n\nx\n")}
	gitOrder := byType(plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject)
	withoutTree := func() []obj {
		var out []obj
		dropped := false
		for _, o := range gitOrder {
			if o.t == plumbing.TreeObject && !dropped && !bytes.Contains(o.b, []byte(".claude-plugin")) {
				dropped = true
				continue
			}
			out = append(out, o)
		}
		return out
	}()
	cases := []struct {
		name string
		objs []obj
	}{
		{"commit, trees, blobs", gitOrder},
		{"blobs, trees, commit", byType(plumbing.BlobObject, plumbing.TreeObject, plumbing.CommitObject)},
		{"by hash", all},
		{"a second commit", append(append([]obj{}, gitOrder...), other)},
		{"a tree missing", withoutTree},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(filepath.Join(dir, ".git"), os.DirFS(filepath.Join(plain, ".git"))); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(dir, ".git", "index")); err != nil {
				t.Fatal(err)
			}
			sc := newStreamCheckout(dir)
			for _, o := range tc.objs {
				if err := sc.object(o.h, o.t, o.b); err != nil {
					t.Fatal(err)
				}
			}
			s, _ := openStorage(dir)
			defer s.Close()
			if err := checkoutStreamed(s, sc, head.Hash()); err != nil {
				t.Fatal(err)
			}
			assertSameCheckout(t, dir, plain)
		})
	}
}
