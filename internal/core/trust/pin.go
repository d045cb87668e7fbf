package trust

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/wharfhq/wharf/plugin"
)

// Pin is what wharf trusts about one installed plugin version: the digest of
// its tree when it was installed (or the marketplace's integrity) and the
// stat fingerprint checked on the cache-only load path. The installed
// registry stores it.
type Pin struct {
	ID      plugin.ID `json:"id"`
	Version string    `json:"version"`
	Digest  string    `json:"digest"`
	FP      FP        `json:"fp"`
}

// NewPin pins a digested tree.
func NewPin(id plugin.ID, version string, t *Tree) Pin {
	return Pin{ID: id, Version: version, Digest: t.Digest, FP: t.Fingerprint()}
}

// MismatchError is a plugin tree whose digest is not the one trusted.
// Changed names the paths that differ when a file list was recorded with the
// pin; it is empty when only the digest is known (a marketplace integrity).
type MismatchError struct {
	ID       plugin.ID
	Version  string
	Expected string
	Actual   string
	Changed  []string
	// What the expected digest came from: "pin", "integrity" or "expected".
	Source string
}

func (e *MismatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: content digest %s does not match the %s digest %s", e.object(), e.Actual, e.sourceName(), e.Expected)
	if len(e.Changed) > 0 {
		b.WriteString("; changed: ")
		b.WriteString(strings.Join(limit(e.Changed, 20), ", "))
		if len(e.Changed) > 20 {
			fmt.Fprintf(&b, ", and %d more", len(e.Changed)-20)
		}
	}
	return b.String()
}

func (e *MismatchError) object() string {
	s := e.ID.String()
	if e.ID.IsZero() {
		s = "plugin"
	}
	if e.Version != "" {
		s += " " + e.Version
	}
	return s
}

func (e *MismatchError) sourceName() string {
	switch e.Source {
	case "integrity":
		return "marketplace integrity"
	case "pin":
		return "pinned"
	}
	return "expected"
}

func limit(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func mismatch(m *MismatchError, hint string) error {
	return &plugin.Error{Layer: plugin.LayerTrust, Type: plugin.TypeTrustRejected, Object: m.object(), Err: m, Hint: hint}
}

// CheckPin re-hashes root and fails with a *MismatchError (inside a
// *plugin.Error, trust layer, trust-rejected) when its digest is not
// expectedDigest.
func CheckPin(id plugin.ID, version, expectedDigest, root string) error {
	_, err := Pin{ID: id, Version: version, Digest: expectedDigest}.Check(root)
	return err
}

// Check re-hashes root and compares it with the pin. When the pin carries a
// fingerprint, the error names the changed paths (by content hash when the
// fingerprint has them). The tree is returned even on a mismatch.
func (p Pin) Check(root string) (*Tree, error) {
	hint := "reinstall it to restore the pinned content: wharf install " + p.ID.String() +
		"; if the change is intended, update it: wharf update " + p.ID.String()
	t, err := check(p, root, "pin", hint)
	if err != nil {
		return t, err
	}
	// The digest matches, but the installed tree must hold nothing the
	// digest does not cover.
	if un := Uncovered(root); len(un) > 0 {
		changes := make([]Change, len(un))
		for i, u := range un {
			changes[i] = Change{u, "added"}
		}
		return t, &plugin.Error{Layer: plugin.LayerTrust, Type: plugin.TypeTrustRejected, Object: p.ID.String() + " " + p.Version + " (" + root + ")",
			Err: &FingerprintError{Root: root, Changed: changes}, Hint: "reinstall it to restore the pinned content: wharf install " + p.ID.String() + " --force"}
	}
	return t, nil
}

// CheckFast checks only the pin's fingerprint (no content read), for the
// cache-only load path.
func (p Pin) CheckFast(root string) error {
	err := CheckFingerprint(root, p.FP)
	if err == nil {
		return nil
	}
	if pe, ok := err.(*plugin.Error); ok {
		pe.Object = p.ID.String() + " " + p.Version + " (" + root + ")"
	}
	return err
}

// CheckIntegrity checks a fetched tree against the `integrity` digest its
// marketplace entry publishes. An empty integrity is not checked.
func CheckIntegrity(id plugin.ID, version, integrity, root string) (*Tree, error) {
	if integrity == "" {
		return Digest(root)
	}
	if !ValidDigest(integrity) {
		return nil, &plugin.Error{Layer: plugin.LayerTrust, Type: plugin.TypeTrustRejected, Object: id.String(),
			Err:  fmt.Errorf("marketplace integrity %q is not a w1: digest", integrity),
			Hint: "the marketplace entry must carry integrity \"w1:<base64 sha256>\"; compute it with: wharf verify <plugin-dir> --json"}
	}
	return check(Pin{ID: id, Version: version, Digest: integrity}, root, "integrity",
		"the fetched plugin is not what its marketplace published; run: wharf marketplace update "+id.Source+" and retry")
}

func check(p Pin, root, source, hint string) (*Tree, error) {
	t, err := Digest(root)
	if err != nil {
		return nil, err
	}
	if t.Digest == p.Digest {
		return t, nil
	}
	return t, mismatch(&MismatchError{ID: p.ID, Version: p.Version, Expected: p.Digest, Actual: t.Digest,
		Changed: ChangedSince(p.FP, t), Source: source}, hint)
}

// ChangedSince names the paths of t that differ from a recorded fingerprint:
// by content hash where the fingerprint has one, else by kind, size and mode.
func ChangedSince(fp FP, t *Tree) []string {
	if fp.IsZero() || t == nil {
		return nil
	}
	var rec []Entry
	for _, e := range fp.Entries {
		if e.Kind == "d" {
			continue
		}
		en := Entry{Path: e.Path, Kind: Kind(e.Kind[0]), Size: e.Size, Mode: e.Mode}
		if e.Hash != "" {
			hex.Decode(en.Hash[:], []byte(e.Hash))
		}
		rec = append(rec, en)
	}
	var out []string
	i, j := 0, 0
	a := t.Entries
	for i < len(rec) || j < len(a) {
		switch {
		case j >= len(a) || (i < len(rec) && rec[i].Path < a[j].Path):
			out = append(out, rec[i].Path)
			i++
		case i >= len(rec) || a[j].Path < rec[i].Path:
			out = append(out, a[j].Path)
			j++
		default:
			r, x := rec[i], a[j]
			hashKnown := fp.Entries != nil && r.Hash != [32]byte{}
			if r.Kind != x.Kind || (hashKnown && r.Hash != x.Hash) || (!hashKnown && r.Size != x.Size) {
				out = append(out, r.Path)
			}
			i++
			j++
		}
	}
	return out
}
