package cache

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/wharfhq/wharf/internal/client/diskrec"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// recordMagic starts a registry record in wharf's binary encoding. A JSON
// record (what earlier versions wrote, still read) starts with '{' or
// whitespace, never with a NUL byte. recordMagicV1 is the binary encoding
// before fingerprints recorded ctimes, recordMagicV2 the one before records
// kept their plugin's source; both are still read.
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
//	  varint ctime (not in recordMagicV1), uvarint mode, str hash (hex,
//	  may be empty)
//	byte hasSource (not in recordMagicV1, recordMagicV2), and when it is 1:
//	  str kind, path, repo, url, ref, sha, package, version, registry, sha256
//
// where str and bytes are a uvarint length and that many bytes.
const (
	recordMagic   = "\x00wr\x03"
	recordMagicV2 = "\x00wr\x02"
	recordMagicV1 = "\x00wr\x01"
)

// errRecord is a binary record that does not decode.
var errRecord = errors.New("malformed binary record")

// encodeRecord writes rec in the binary encoding.
func encodeRecord(rec Record) ([]byte, error) { return encodeRecordAs(rec, recordMagic) }

// encodeRecordAs writes rec in the binary encoding that magic names;
// recordMagicV1 leaves the ctimes out (tests write it to check that
// records of earlier versions still read).
func encodeRecordAs(rec Record, magic string) ([]byte, error) {
	n := len(recordMagic) + 64 + len(rec.ID.Name) + len(rec.ID.Source) + len(rec.Version) + len(rec.Scope) +
		len(rec.ProjectPath) + len(rec.InstallPath) + len(rec.GitCommitSha) + len(rec.Digest)
	for _, e := range rec.Fingerprint.Entries {
		n += len(e.Path) + len(e.Hash) + 32
	}
	b := make([]byte, 0, n)
	b = append(b, magic...)
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
		if magic != recordMagicV1 {
			b = binary.AppendVarint(b, e.Ctime)
		}
		b = binary.AppendUvarint(b, uint64(e.Mode))
		str(e.Hash)
	}
	if magic == recordMagic {
		if src := rec.Source; src == nil {
			b = append(b, 0)
		} else {
			b = append(b, 1)
			for _, s := range []string{string(src.Kind), src.Path, src.Repo, src.URL, src.Ref, src.SHA, src.Package, src.Version, src.Registry, src.SHA256} {
				str(s)
			}
		}
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
	var magic string
	if len(v) >= len(recordMagic) {
		magic = string(v[:len(recordMagic)])
	}
	if magic != recordMagic && magic != recordMagicV2 && magic != recordMagicV1 {
		err := json.Unmarshal(v, &rec)
		return rec, err
	}
	withCtime := magic != recordMagicV1
	// One string holds every text of the record; the fields are slices of
	// it, so the decode allocates the string, the entries and little else.
	s := string(v[len(recordMagic):])
	d := diskrec.NewReader(s, 0, func(what string, off int) error {
		return fmt.Errorf("%w: truncated at byte %d (%s)", errRecord, off+len(recordMagic), what)
	})
	id := d.Str()
	rec.Version = d.Str()
	rec.Scope = d.Str()
	rec.ProjectPath = d.Str()
	rec.InstallPath = d.Str()
	rec.GitCommitSha = d.Str()
	rec.Digest = d.Str()
	installed, updated := d.Str(), d.Str()
	flags := d.Byte()
	n := d.Uvarint()
	if d.Err() != nil {
		return Record{}, d.Err()
	}
	// Every entry takes at least 6 bytes; a count beyond that is garbage,
	// not a reason to allocate.
	if n > uint64(d.Left())/6 {
		return Record{}, fmt.Errorf("%w: %d fingerprint entries in %d bytes", errRecord, n, d.Left())
	}
	if n > 0 {
		rec.Fingerprint.Entries = make([]trust.FPEntry, n)
	}
	for i := range rec.Fingerprint.Entries {
		e := &rec.Fingerprint.Entries[i]
		e.Path = d.Str()
		k := d.Byte()
		e.Kind = kindString(k)
		e.Size = d.Varint()
		e.Mtime = d.Varint()
		if withCtime {
			e.Ctime = d.Varint()
		}
		e.Mode = fs.FileMode(d.Uvarint())
		e.Hash = d.Str()
		if d.Err() != nil {
			return Record{}, d.Err()
		}
		if e.Kind == "" {
			return Record{}, fmt.Errorf("%w: fingerprint entry %q has kind %q", errRecord, e.Path, k)
		}
	}
	if magic == recordMagic {
		switch d.Byte() {
		case 0:
		case 1:
			src := &plugin.Source{Kind: plugin.SourceKind(d.Str())}
			for _, f := range []*string{&src.Path, &src.Repo, &src.URL, &src.Ref, &src.SHA, &src.Package, &src.Version, &src.Registry, &src.SHA256} {
				*f = d.Str()
			}
			rec.Source = src
		default:
			return Record{}, fmt.Errorf("%w: source flag is neither 0 nor 1", errRecord)
		}
		if d.Err() != nil {
			return Record{}, d.Err()
		}
	}
	if d.Left() != 0 {
		return Record{}, fmt.Errorf("%w: %d trailing bytes", errRecord, d.Left())
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
