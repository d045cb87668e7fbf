package channel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// LeftHeld is a plugin whose version in its marketplace waits for an
// administrator's approval while no approved version can be served.
const LeftHeld = "held"

// Admission is the server's answer about one vendored version.
type Admission struct {
	// Held is why the version may not be served ("" when it may).
	Held string
	// Approved is the digest of the approved version to serve instead
	// ("" when none is approved).
	Approved string
}

// Admitter decides whether the version vd, vendored for hit, may be served
// (the server's approvals; it records a version it sees for the first
// time). Implementations must be safe for concurrent use.
type Admitter func(ctx context.Context, h marketplace.Hit, vd *Vendored) (Admission, error)

// admit applies the admitter to vd: it returns the copy to serve (vd, or
// the approved version's copy), what is held ("" when nothing), or a
// left-out record when nothing can be served.
func (st *planState) admit(ctx context.Context, id plugin.ID, h marketplace.Hit, vd *Vendored) (*Vendored, string, *LeftOut, error) {
	if st.in.Admit == nil {
		return vd, "", nil, nil
	}
	a, err := st.in.Admit(ctx, h, vd)
	if err != nil {
		return nil, "", nil, fmt.Errorf("approvals of %s %s: %w", id, vd.Version, err)
	}
	if a.Held == "" {
		return vd, "", nil, nil
	}
	if a.Approved == "" {
		return nil, "", &LeftOut{Plugin: id.String(), Kind: LeftHeld, Reason: a.Held + "; no version of it is approved yet"}, nil
	}
	old, err := st.in.Vendor.ByDigest(a.Approved)
	if err != nil {
		return nil, "", &LeftOut{Plugin: id.String(), Kind: LeftHeld,
			Reason: fmt.Sprintf("%s; the approved content %s is not on this server (%v)", a.Held, a.Approved, err)}, nil
	}
	return old, a.Held, nil, nil
}

// ByDigest returns a verified copy whose tree has the w1: digest d, made
// by an earlier fetch (of any marketplace revision), and marks it used. It
// is how a channel keeps serving an approved version after its marketplace
// lists a newer one. An error says no such copy is here.
func (v *Vendor) ByDigest(d string) (*Vendored, error) {
	if !trust.ValidDigest(d) {
		return nil, fmt.Errorf("%q is not a w1: digest", d)
	}
	trees := filepath.Join(v.Dir, "trees")
	ents, err := os.ReadDir(trees)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range ents {
		key, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() {
			continue
		}
		found, err := v.byKey(key, d)
		if err == nil && found != nil {
			return found, nil
		}
	}
	return nil, errors.New("no vendored copy has this digest")
}

// byKey returns copy key when its metadata names digest d and its tree
// still has it.
func (v *Vendor) byKey(key, d string) (*Vendored, error) {
	defer v.lock(key)()
	meta := filepath.Join(v.Dir, "trees", key+".json")
	b, err := os.ReadFile(meta)
	if err != nil {
		return nil, err
	}
	var vd Vendored
	if json.Unmarshal(b, &vd) != nil || vd.Digest != d {
		return nil, nil
	}
	vd.Dir = filepath.Join(v.Dir, "trees", key)
	tree, err := trust.Digest(vd.Dir)
	if err != nil || tree.Digest != d {
		return nil, nil
	}
	now := time.Now()
	_ = os.Chtimes(meta, now, now)
	return &vd, nil
}
