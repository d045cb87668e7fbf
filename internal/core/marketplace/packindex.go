package marketplace

import (
	"bufio"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"

	"compress/zlib"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// indexingStorage is a clone's filesystem storage whose received pack is
// indexed by wharf's indexer rather than go-git's. The files it leaves are
// the ones go-git's storage writes (objects/pack/pack-<sum>.pack and
// .idx, read-only), so everything that reads the clone reads them as
// before.
//
// go-git's indexer inflates every object two or three times: once to
// hash it as it arrives, and again for every object, and for a base once
// more per delta, when it resolves deltas afterwards. At 31,000 files
// that was about a quarter of an add's CPU time. wharf's inflates each
// object once as it arrives and resolves a delta at once from a cache of
// recent contents (reading a base back from the pack only when it has
// left the cache); each object it decodes also goes to sink, so that a
// checkout need not read it again.
type indexingStorage struct {
	*filesystem.Storage
	packDir string     // <clone>/.git/objects/pack
	sink    objectSink // may be nil
}

// objectSink receives each object of a pack as it is decoded, deltas
// resolved, in pack order (a delta whose base comes later in the pack,
// after the pack's end). content is only valid during the call.
type objectSink interface {
	object(h plumbing.Hash, t plumbing.ObjectType, content []byte) error
}

// newIndexingStorage returns the storage of a new clone at dir. Its
// pack list is not cached (go-git's ExclusiveAccess), as go-git's storage
// would not see the pack wharf's indexer adds. Close it when done.
func newIndexingStorage(dir string, sink objectSink) *indexingStorage {
	dot := osfs.New(filepath.Join(dir, git.GitDirName))
	s := filesystem.NewStorageWithOptions(dot, cache.NewObjectLRU(storageCacheBytes), filesystem.Options{})
	return &indexingStorage{Storage: s, packDir: filepath.Join(dir, git.GitDirName, "objects", "pack"), sink: sink}
}

// PackfileWriter is the storer.PackfileWriter go-git's fetch writes a
// received pack into.
func (s *indexingStorage) PackfileWriter() (io.WriteCloser, error) {
	if err := os.MkdirAll(s.packDir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(s.packDir, "tmp_pack_")
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	w := &packWriter{pw: pw, done: make(chan error, 1)}
	go func() {
		err := indexPack(pr, tmp, s.packDir, s.sink)
		s.Reindex() // the new pack
		if err != nil {
			pr.CloseWithError(err)
		} else {
			_, _ = io.Copy(io.Discard, pr) // what follows the pack
		}
		w.done <- err
	}()
	return w, nil
}

// packWriter hands the bytes written to it to the indexer.
type packWriter struct {
	pw   *io.PipeWriter
	done chan error
}

func (w *packWriter) Write(p []byte) (int, error) { return w.pw.Write(p) }

// Close ends the pack and returns the indexer's error.
func (w *packWriter) Close() error {
	_ = w.pw.Close()
	return <-w.done
}

// packCacheBytes bounds the contents the indexer keeps for delta bases.
const packCacheBytes = 4 << 20

// maxDeltaDepth is git's limit on a delta chain (pack-objects' depth bits).
const maxDeltaDepth = 4095

// packObject is what the indexer knows of one object of the pack.
type packObject struct {
	off      int64
	typ      plumbing.ObjectType // the object's, a delta's once resolved; 0 before
	hash     plumbing.Hash
	crc      uint32
	depth    int
	base     *packObject   // a delta's base, when known
	baseHash plumbing.Hash // a ref delta's base
	delta    bool
}

type packIndexer struct {
	in      *packInput
	tmp     *os.File
	out     *bufio.Writer // onto tmp
	sink    objectSink
	zr      io.ReadCloser
	objs    []*packObject                 // in pack order, so by offset
	byHash  map[plumbing.Hash]*packObject // made at the first ref delta
	cache   *cache.BufferLRU
	idx     idxfile.Writer
	pending []*packObject // deltas whose base was not there yet
}

// indexPack reads a pack from r into tmp, a new file in packDir, and
// saves it there with its index as pack-<sum>.pack and .idx. An empty r
// saves nothing. On an error tmp is removed.
func indexPack(r io.Reader, tmp *os.File, packDir string, sink objectSink) (err error) {
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	out := bufio.NewWriterSize(tmp, 64<<10)
	p := &packIndexer{
		in:    &packInput{r: r, buf: make([]byte, 64<<10), sum: sha1.New(), out: out},
		tmp:   tmp,
		out:   out,
		sink:  sink,
		cache: cache.NewBufferLRU(packCacheBytes),
	}
	var head [12]byte
	n, err := io.ReadFull(p.in, head[:])
	if n == 0 && errors.Is(err, io.EOF) {
		_ = tmp.Close()
		return os.Remove(tmp.Name())
	}
	if err != nil {
		return fmt.Errorf("%w: %w", packfile.ErrMalformedPackFile, noEOF(err))
	}
	if string(head[:4]) != "PACK" {
		return fmt.Errorf("%w: no pack signature", packfile.ErrMalformedPackFile)
	}
	if v := binary.BigEndian.Uint32(head[4:8]); v != 2 && v != 3 {
		return fmt.Errorf("%w: pack version %d", packfile.ErrUnsupportedVersion, v)
	}
	count := binary.BigEndian.Uint32(head[8:12])
	// Not idx.OnHeader(count): it reserves room for count entries, which
	// the pack's header, from the server, may make any size.
	p.objs = make([]*packObject, 0, min(count, 1<<16))
	defer func() {
		if p.zr != nil {
			_ = p.zr.Close()
		}
	}()
	for range count {
		if err := p.next(); err != nil {
			return fmt.Errorf("%w: object at offset %d: %w", packfile.ErrMalformedPackFile, p.in.offset(), noEOF(err))
		}
	}
	p.in.account()
	want := p.in.sum.Sum(nil)
	var got [20]byte
	if _, err := io.ReadFull(p.in, got[:]); err != nil {
		return fmt.Errorf("%w: no checksum: %w", packfile.ErrMalformedPackFile, noEOF(err))
	}
	if string(got[:]) != string(want) {
		return fmt.Errorf("%w: checksum %x, the pack's bytes give %x", packfile.ErrMalformedPackFile, got, want)
	}
	p.in.account() // the checksum goes to the file too
	if p.in.err != nil {
		return p.in.err
	}
	if err := p.out.Flush(); err != nil {
		return err
	}
	if err := p.resolvePending(); err != nil {
		return fmt.Errorf("%w: %w", packfile.ErrMalformedPackFile, err)
	}
	var sum plumbing.Hash
	copy(sum[:], got[:])
	if err := p.idx.OnFooter(sum); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return savePack(&p.idx, tmp.Name(), filepath.Join(packDir, "pack-"+sum.String()))
}

// savePack writes the index of the pack at tmp and moves the pack to
// base.pack, as go-git's storage does (index first, both read-only).
func savePack(w *idxfile.Writer, tmp, base string) error {
	idx, err := w.Index()
	if err != nil {
		return err
	}
	if _, err := os.Lstat(base + ".idx"); err != nil {
		f, err := os.Create(base + ".idx")
		if err != nil {
			return err
		}
		if _, err := idxfile.NewEncoder(f).Encode(idx); err != nil {
			_ = f.Close()
			_ = os.Remove(base + ".idx")
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		_ = os.Chmod(base+".idx", 0o444)
	}
	if _, err := os.Lstat(base + ".pack"); err == nil {
		return os.Remove(tmp)
	}
	if err := os.Rename(tmp, base+".pack"); err != nil {
		return err
	}
	_ = os.Chmod(base+".pack", 0o444)
	return nil
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// next reads the next object of the pack.
func (p *packIndexer) next() error {
	p.in.account()
	p.in.crc = 0
	off := p.in.offset()
	typ, size, err := readObjectHeader(p.in)
	if err != nil {
		return err
	}
	o := &packObject{off: off}
	switch typ {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
		o.typ = typ
	case plumbing.OFSDeltaObject:
		rel, err := readDeltaOffset(p.in)
		if err != nil {
			return err
		}
		base := p.at(off - rel)
		if base == nil {
			return fmt.Errorf("delta on offset %d, where no object starts", off-rel)
		}
		o.delta, o.base = true, base
	case plumbing.REFDeltaObject:
		o.delta = true
		if _, err := io.ReadFull(p.in, o.baseHash[:]); err != nil {
			return err
		}
		o.base = p.hashes()[o.baseHash]
	default:
		return fmt.Errorf("object type %d", typ)
	}
	data, err := p.inflate(p.in, size)
	if err != nil {
		return err
	}
	p.in.account()
	o.crc = p.in.crc
	p.objs = append(p.objs, o)
	if o.delta && (o.base == nil || o.base.typ == 0) {
		p.pending = append(p.pending, o)
		return nil
	}
	return p.add(o, data)
}

// add records o, whose data is its content or, for a delta, the delta.
func (p *packIndexer) add(o *packObject, data []byte) error {
	if o.delta {
		if o.depth = o.base.depth + 1; o.depth > maxDeltaDepth {
			return fmt.Errorf("delta chain longer than %d", maxDeltaDepth)
		}
		base, err := p.content(o.base)
		if err != nil {
			return err
		}
		if data, err = packfile.PatchDelta(base, data); err != nil {
			return fmt.Errorf("delta at offset %d: %w", o.off, err)
		}
		o.typ = o.base.typ
	}
	h := plumbing.NewHasher(o.typ, int64(len(data)))
	_, _ = h.Write(data)
	o.hash = h.Sum()
	if _, ok := p.byHash[o.hash]; !ok && p.byHash != nil {
		p.byHash[o.hash] = o
	}
	p.idx.Add(o.hash, uint64(o.off), o.crc)
	p.cache.Put(o.off, data)
	if p.sink != nil {
		return p.sink.object(o.hash, o.typ, data)
	}
	return nil
}

// at returns the object at offset off, or nil.
func (p *packIndexer) at(off int64) *packObject {
	i := sort.Search(len(p.objs), func(i int) bool { return p.objs[i].off >= off })
	if i < len(p.objs) && p.objs[i].off == off {
		return p.objs[i]
	}
	return nil
}

// hashes returns the resolved objects by hash. Only a ref delta needs
// them (git sends offset deltas to clients that can read them, as go-git
// can), so the map is made when the first one comes.
func (p *packIndexer) hashes() map[plumbing.Hash]*packObject {
	if p.byHash == nil {
		p.byHash = make(map[plumbing.Hash]*packObject, len(p.objs))
		for _, o := range p.objs {
			if _, ok := p.byHash[o.hash]; !ok && o.typ != 0 {
				p.byHash[o.hash] = o
			}
		}
	}
	return p.byHash
}

// resolvePending resolves the deltas whose base came after them, once the
// whole pack is on disk.
func (p *packIndexer) resolvePending() error {
	for len(p.pending) > 0 {
		var left []*packObject
		for _, o := range p.pending {
			if o.base == nil {
				o.base = p.hashes()[o.baseHash]
			}
			if o.base == nil || o.base.typ == 0 {
				left = append(left, o)
				continue
			}
			_, _, data, err := p.readAt(o.off)
			if err != nil {
				return err
			}
			if err := p.add(o, data); err != nil {
				return err
			}
		}
		if len(left) == len(p.pending) {
			return fmt.Errorf("delta at offset %d on %s, which is not in the pack: %w", left[0].off, left[0].baseHash, packfile.ErrReferenceDeltaNotFound)
		}
		p.pending = left
	}
	return nil
}

// content returns the content of o, a resolved object: from the cache, or
// read back from the pack.
func (p *packIndexer) content(o *packObject) ([]byte, error) {
	if b, ok := p.cache.Get(o.off); ok {
		return b, nil
	}

	if err := p.out.Flush(); err != nil {
		return nil, err
	}
	_, _, data, err := p.readAt(o.off)
	if err != nil {
		return nil, err
	}
	if o.delta {
		base, err := p.content(o.base)
		if err != nil {
			return nil, err
		}
		if data, err = packfile.PatchDelta(base, data); err != nil {
			return nil, err
		}
	}
	p.cache.Put(o.off, data)
	return data, nil
}

// readAt reads the object at off back from the pack written so far.
func (p *packIndexer) readAt(off int64) (plumbing.ObjectType, int64, []byte, error) {
	r := bufio.NewReaderSize(io.NewSectionReader(p.tmp, off, 1<<62), 16<<10)
	typ, size, err := readObjectHeader(r)
	if err != nil {
		return 0, 0, nil, err
	}
	switch typ {
	case plumbing.OFSDeltaObject:
		_, err = readDeltaOffset(r)
	case plumbing.REFDeltaObject:
		_, err = r.Discard(20)
	}
	if err != nil {
		return 0, 0, nil, err
	}
	data, err := p.inflate(r, size)
	return typ, size, data, err
}

// inflate reads a zlib stream of size bytes from r.
func (p *packIndexer) inflate(r io.Reader, size int64) ([]byte, error) {
	var err error
	if p.zr == nil {
		p.zr, err = zlib.NewReader(r)
	} else {
		err = p.zr.(zlib.Resetter).Reset(r, nil)
	}
	if err != nil {
		return nil, err
	}
	data := make([]byte, min(size, 16<<20))
	if _, err := io.ReadFull(p.zr, data); err != nil {
		return nil, fmt.Errorf("inflate: %w", noEOF(err))
	}
	if size > int64(len(data)) {
		var b bytesBuffer
		b.b = data
		if _, err := io.CopyN(&b, p.zr, size-int64(len(data))); err != nil {
			return nil, fmt.Errorf("inflate: %w", noEOF(err))
		}
		data = b.b
	}
	// The stream must end here, its checksum read.
	var one [1]byte
	if n, err := p.zr.Read(one[:]); n != 0 || err != io.EOF {
		if err == nil || err == io.EOF {
			err = fmt.Errorf("more than the %d bytes its header says", size)
		}
		return nil, fmt.Errorf("inflate: %w", err)
	}
	return data, nil
}

// bytesBuffer appends what is written to b.
type bytesBuffer struct{ b []byte }

func (b *bytesBuffer) Write(p []byte) (int, error) { b.b = append(b.b, p...); return len(p), nil }

type byteReader interface {
	io.Reader
	io.ByteReader
}

// readObjectHeader reads an object's type and size.
func readObjectHeader(r byteReader) (plumbing.ObjectType, int64, error) {
	c, err := r.ReadByte()
	if err != nil {
		return 0, 0, err
	}
	typ := plumbing.ObjectType((c >> 4) & 7)
	size := int64(c & 15)
	for shift := 4; c&0x80 != 0; shift += 7 {
		if shift > 56 {
			return 0, 0, errors.New("object size too large")
		}
		if c, err = r.ReadByte(); err != nil {
			return 0, 0, err
		}
		size |= int64(c&0x7f) << shift
	}
	return typ, size, nil
}

// readDeltaOffset reads an offset delta's distance back to its base.
func readDeltaOffset(r byteReader) (int64, error) {
	c, err := r.ReadByte()
	if err != nil {
		return 0, err
	}
	off := int64(c & 0x7f)
	for c&0x80 != 0 {
		if off >= 1<<55 {
			return 0, errors.New("delta offset too large")
		}
		if c, err = r.ReadByte(); err != nil {
			return 0, err
		}
		off = (off+1)<<7 | int64(c&0x7f)
	}
	if off <= 0 {
		return 0, errors.New("delta offset zero")
	}
	return off, nil
}

// packInput reads the received pack, and keeps the offset, the pack's
// checksum and the current object's CRC of what has been read, and
// writes it to out. It reads no byte further than asked (it is an
// io.ByteReader, so zlib reads through it byte by byte).
type packInput struct {
	r    io.Reader
	buf  []byte
	n    int   // bytes in buf
	pos  int   // next to read
	mark int   // buf[:mark] accounted for
	base int64 // offset of buf[0]
	sum  hash.Hash
	crc  uint32
	out  io.Writer
	err  error
}

// account adds what was read since the last call to the sum, the CRC and
// out.
func (in *packInput) account() {
	b := in.buf[in.mark:in.pos]
	if len(b) == 0 {
		return
	}
	in.sum.Write(b)
	in.crc = crc32.Update(in.crc, crc32.IEEETable, b)
	if _, err := in.out.Write(b); err != nil && in.err == nil {
		in.err = err
	}
	in.mark = in.pos
}

func (in *packInput) offset() int64 { return in.base + int64(in.pos) }

func (in *packInput) fill() error {
	if in.err != nil {
		return in.err
	}
	in.account()
	in.base += int64(in.n)
	in.n, in.pos, in.mark = 0, 0, 0
	for in.n == 0 {
		n, err := in.r.Read(in.buf)
		in.n = n
		if n == 0 && err != nil {
			in.err = err
			return err
		}
	}
	return nil
}

func (in *packInput) ReadByte() (byte, error) {
	if in.pos == in.n {
		if err := in.fill(); err != nil {
			return 0, err
		}
	}
	c := in.buf[in.pos]
	in.pos++
	return c, nil
}

func (in *packInput) Read(b []byte) (int, error) {
	if in.pos == in.n {
		if err := in.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(b, in.buf[in.pos:in.n])
	in.pos += n
	return n, nil
}
