package trust

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/wharfhq/wharf/plugin"
)

// StatementType names the statement form wharf signs.
const StatementType = "wharf-plugin/v1"

// Statement is what a signature covers: a plugin's name, the marketplace
// it is published in, its version and its content digest. Signing the
// statement rather than the bare digest binds the content to one plugin of
// one marketplace at one version, so a signature cannot be carried over to
// the same content published under another name or marketplace, nor make
// an old version pass for a new one.
//
// The signed bytes are the statement's canonical JSON (Canonical): the
// five keys in the order below, no spaces, no trailing newline, strings
// escaped as encoding/json does without HTML escaping:
//
//	{"type":"wharf-plugin/v1","plugin":"deploy","marketplace":"corp","version":"1.0.0","digest":"w1:..."}
type Statement struct {
	Type        string `json:"type"`
	Plugin      string `json:"plugin"`
	Marketplace string `json:"marketplace"`
	// Version is the plugin's declared version (DeclaredVersion); empty
	// when neither its plugin.json nor its marketplace entry declares one.
	Version string `json:"version"`
	Digest  string `json:"digest"`
}

// NewStatement is the statement for id at version with content digest.
func NewStatement(id plugin.ID, version, digest string) Statement {
	return Statement{Type: StatementType, Plugin: id.Name, Marketplace: id.Source, Version: version, Digest: digest}
}

// Canonical returns the bytes a signature over st covers.
func (st Statement) Canonical() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(st) // strings only: cannot fail
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// check refuses a statement that does not name what it binds.
func (st Statement) check() error {
	switch {
	case st.Type != StatementType:
		return fmt.Errorf("statement type %q is not %s", st.Type, StatementType)
	case st.Plugin == "":
		return errors.New("the statement names no plugin")
	case st.Marketplace == "":
		return errors.New("the statement names no marketplace")
	case !ValidDigest(st.Digest):
		return fmt.Errorf("refusing to sign %q: not a w1: digest", st.Digest)
	}
	return nil
}

// String names the statement's subject for messages: deploy@corp 1.0.0.
func (st Statement) String() string {
	s := st.Plugin + "@" + st.Marketplace
	if st.Version != "" {
		s += " " + st.Version
	} else {
		s += " (no version)"
	}
	return s
}

// DeclaredVersion is the version a statement binds for the plugin at dir:
// its plugin.json version, else the marketplace entry's (entryVersion),
// else empty. Both signing and verifying use it, so that the same tree and
// entry give the same statement.
func DeclaredVersion(dir, entryVersion string) string {
	vs := plugin.VersionSources{Entry: entryVersion}
	f := plugin.ManifestFile(dir)
	if data, err := os.ReadFile(f); err == nil {
		if m, _, err := plugin.ParseManifest(data, f); err == nil {
			vs.Manifest = m.Version
		}
	}
	return plugin.VersionOf(vs)
}
