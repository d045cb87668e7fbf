package cache

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/wharfhq/wharf/plugin"
	"github.com/wharfhq/wharf/trust"
)

// recordMagic starts a registry record in wharf's binary encoding. A JSON
// record (what earlier versions wrote, still read) starts with '{' or
// whitespace, never with a NUL byte.
//
// The registry is read at every agent startup, and a record is mostly its
// fingerprint: a JSON decode of 200 records with ~20 fingerprint entries
// each cost several milliseconds of reflection, the binary decode about a
// tenth of one. The layout after the magic:
//
//	str id, version, scope, projectPath, installPath, gitCommitSha, digest
//	bytes installedAt, lastUpdated   (time.Time.MarshalBinary)
//	byte flags                       (bit 0: auto)
//	uvarint n, then n fingerprint entries:
//	  str path, byte kind ('d','f','x','l'), varint size, varint mtime,
//	  uvarint mode, str hash (hex, may be empty)
//
// where str and bytes are a uvarint length and that many bytes.
const recordMagic = "\x00wr\x01"

// errRecord is a binary record that does not decode.
var errRecord = errors.New("malformed binary record")

// encodeRecord writes rec in the binary encoding.
func encodeRecord(rec Record) ([]byte, error) {
	n := len(recordMagic) + 64 + len(rec.ID.Name) + len(rec.ID.Source) + len(rec.Version) + len(rec.Scope) +
		len(rec.ProjectPath) + len(rec.InstallPath) + len(rec.GitCommitSha) + len(rec.Digest)
	for _, e := range rec.Fingerprint.Entries {
		n += len(e.Path) + len(e.Hash) + 32
	}
	b := make([]byte, 0, n)
	b = append(b, recordMagic...)
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	str(rec.ID.String())
	for _, s := range []string{rec.Version, rec.Scope, rec.ProjectPath, rec.InstallPath, rec.GitCommitSha, rec.Digest} {
		str(s)
	}
	for _, t := range []time.Time{rec.InstalledAt, rec.LastUpdated} {
		tb, err := t.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("installed registry record %s: %w", rec.ID, err)
		}
		str(string(tb))
	}
	var flags byte
	if rec.Auto {
		flags |= 1
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(len(rec.Fingerprint.Entries)))
	for _, e := range rec.Fingerprint.Entries {
		if len(e.Kind) != 1 || kindString(e.Kind[0]) == "" {
			return nil, fmt.Errorf("installed registry record %s: fingerprint entry %q has kind %q", rec.ID, e.Path, e.Kind)
		}
		str(e.Path)
		b = append(b, e.Kind[0])
		b = binary.AppendVarint(b, e.Size)
		b = binary.AppendVarint(b, e.Mtime)
		b = binary.AppendUvarint(b, uint64(e.Mode))
		str(e.Hash)
	}
	return b, nil
}

// kindString returns the interned kind string of a fingerprint entry, so
// that decoding allocates none.
func kindString(k byte) string {
	switch k {
	case 'd':
		return "d"
	case 'f':
		return "f"
	case 'x':
		return "x"
	case 'l':
		return "l"
	}
	return ""
}

// decodeRecord reads a registry record in either encoding.
func decodeRecord(v []byte) (Record, error) {
	var rec Record
	if len(v) < len(recordMagic) || string(v[:len(recordMagic)]) != recordMagic {
		err := json.Unmarshal(v, &rec)
		return rec, err
	}
	// One string holds every text of the record; the fields are slices of
	// it, so the decode allocates the string, the entries and little else.
	s := string(v[len(recordMagic):])
	d := recordDecoder{s: s}
	id := d.str()
	rec.Version = d.str()
	rec.Scope = d.str()
	rec.ProjectPath = d.str()
	rec.InstallPath = d.str()
	rec.GitCommitSha = d.str()
	rec.Digest = d.str()
	installed, updated := d.str(), d.str()
	flags := d.byte()
	n := d.uvarint()
	if d.err != nil {
		return Record{}, d.err
	}
	// Every entry takes at least 6 bytes; a count beyond that is garbage,
	// not a reason to allocate.
	if n > uint64(len(s)-d.off)/6 {
		return Record{}, fmt.Errorf("%w: %d fingerprint entries in %d bytes", errRecord, n, len(s)-d.off)
	}
	if n > 0 {
		rec.Fingerprint.Entries = make([]trust.FPEntry, n)
	}
	for i := range rec.Fingerprint.Entries {
		e := &rec.Fingerprint.Entries[i]
		e.Path = d.str()
		k := d.byte()
		e.Kind = kindString(k)
		e.Size = d.varint()
		e.Mtime = d.varint()
		e.Mode = fs.FileMode(d.uvarint())
		e.Hash = d.str()
		if d.err == nil && e.Kind == "" {
			d.err = fmt.Errorf("%w: fingerprint entry %q has kind %q", errRecord, e.Path, k)
		}
		if d.err != nil {
			return Record{}, d.err
		}
	}
	if d.off != len(s) {
		return Record{}, fmt.Errorf("%w: %d trailing bytes", errRecord, len(s)-d.off)
	}
	var err error
	if rec.ID, err = plugin.ParseID(id); err != nil {
		return Record{}, fmt.Errorf("%w: id: %v", errRecord, err)
	}
	if err := rec.InstalledAt.UnmarshalBinary([]byte(installed)); err != nil {
		return Record{}, fmt.Errorf("%w: installedAt: %v", errRecord, err)
	}
	if err := rec.LastUpdated.UnmarshalBinary([]byte(updated)); err != nil {
		return Record{}, fmt.Errorf("%w: lastUpdated: %v", errRecord, err)
	}
	if flags&^1 != 0 {
		return Record{}, fmt.Errorf("%w: unknown flags %#x", errRecord, flags)
	}
	rec.Auto = flags&1 != 0
	return rec, nil
}

type recordDecoder struct {
	s   string
	off int
	err error
}

func (d *recordDecoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated at byte %d (%s)", errRecord, d.off+len(recordMagic), what)
	}
	d.off = len(d.s)
}

func (d *recordDecoder) uvarint() uint64 {
	var x uint64
	var shift uint
	for i := 0; d.off+i < len(d.s) && i < binary.MaxVarintLen64; i++ {
		c := d.s[d.off+i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break
			}
			d.off += i + 1
			return x | uint64(c)<<shift
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	d.fail("varint")
	return 0
}

func (d *recordDecoder) varint() int64 {
	ux := d.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

func (d *recordDecoder) byte() byte {
	if d.off >= len(d.s) {
		d.fail("byte")
		return 0
	}
	c := d.s[d.off]
	d.off++
	return c
}

func (d *recordDecoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.s)-d.off) {
		d.fail("string")
		return ""
	}
	v := d.s[d.off : d.off+int(n)]
	d.off += int(n)
	return v
}
