package trust

import (
	"crypto/sha256"

	"github.com/wharfhq/wharf/plugin"
)

// KnownHash reports the content hash of the regular file at path (slash
// separated, relative to the root) when the caller wrote that file itself
// and hashed the size bytes it wrote as it wrote them.
type KnownHash func(path string, size int64) ([sha256.Size]byte, bool)

// DigestKnown is Digest of a tree the caller has just written: the walk and
// its rules are Digest's, and every directory, symlink and file is stat'ed
// as Digest stats it, but a regular file whose size is the one known
// reports takes the known hash instead of being read again. A file known
// does not report (or reports with another size) is read and hashed.
//
// It spares an install reading back every file it has just written. The
// known hashes are of the bytes the writer wrote, into a new directory only
// it writes to, so they are the file's content; every later load checks the
// fingerprint taken here, and verify hashes every file again.
func DigestKnown(root string, known KnownHash) (*Tree, error) {
	if known == nil {
		return Digest(root)
	}
	w, err := walk(root, true)
	if err != nil {
		return nil, err
	}
	t := &Tree{Root: root, Entries: w.entries, Dirs: w.dirs}
	var rest []Entry
	var at []int
	for i := range t.Entries {
		e := &t.Entries[i]
		if e.Kind == KindSymlink {
			continue
		}
		if h, ok := known(e.Path, e.Size); ok {
			e.Hash = h
			continue
		}
		rest = append(rest, *e)
		at = append(at, i)
	}
	if err := hashFiles(root, rest); err != nil {
		return nil, err
	}
	for j, i := range at {
		t.Entries[i].Hash = rest[j].Hash
	}
	t.Digest = digestOf(t.Entries)
	return t, nil
}

// CheckIntegrityKnown is CheckIntegrity over DigestKnown. A tree that does
// not match is checked again by CheckIntegrity, which reads every file, so
// the error and the paths it names are CheckIntegrity's.
func CheckIntegrityKnown(id plugin.ID, version, integrity, root string, known KnownHash) (*Tree, error) {
	if known == nil || integrity != "" && !ValidDigest(integrity) {
		return CheckIntegrity(id, version, integrity, root)
	}
	t, err := DigestKnown(root, known)
	if err != nil {
		return nil, err
	}
	if integrity == "" || t.Digest == integrity {
		return t, nil
	}
	return CheckIntegrity(id, version, integrity, root)
}
