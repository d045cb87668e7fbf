package policy

import (
	"time"

	"github.com/wharfhq/wharf/plugin"
)

// A Revocation withdraws one plugin version, or one content digest,
// everywhere. The server keeps them and carries the active ones in the signed
// policy bundle (data.json: wharf.revocations); a client holding that bundle
// never loads, installs or verifies what one matches.
type Revocation struct {
	ID      string    `json:"id"`                // assigned by the server
	Plugin  string    `json:"plugin,omitempty"`  // name@marketplace; empty when only Digest is revoked
	Version string    `json:"version,omitempty"` // with Plugin; empty with Digest alone
	Digest  string    `json:"digest,omitempty"`  // a w1: content digest
	Reason  string    `json:"reason"`
	By      string    `json:"by,omitempty"` // the admin token that revoked it
	Created time.Time `json:"created"`
}

// Matches reports whether r withdraws the plugin id at version whose content
// digest is digest. A plugin+version revocation matches that version of that
// plugin; a digest revocation matches that content under any name.
func (r Revocation) Matches(id plugin.ID, version, digest string) bool {
	if r.Digest != "" && digest != "" && r.Digest == digest {
		return true
	}
	return r.Plugin != "" && r.Version != "" && r.Plugin == id.String() && r.Version == version
}

// Revocations is the set a bundle carries.
type Revocations []Revocation

// Match returns the first revocation that matches, if any.
func (rs Revocations) Match(id plugin.ID, version, digest string) (Revocation, bool) {
	for _, r := range rs {
		if r.Matches(id, version, digest) {
			return r, true
		}
	}
	return Revocation{}, false
}
