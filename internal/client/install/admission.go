package install

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/internal/core/capability"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/plugin"
)

// The admission gate: which new versions of a plugin install and update
// take.
//
// With a policy server, its signed bundle's admissions decide
// (policy.Admissions): a version the server holds for review, denied or
// has not admitted is refused with what it adds, and update keeps the
// installed version. Nothing on the client overrides them.
//
// Without one (Options.AcceptedFile set), an update to a version that adds
// capabilities over the installed one (capability.Diff) is refused until
// the user accepts it (UpdateOptions.Accept, wharf update --accept); what
// was accepted is recorded in AcceptedFile (written temp, fsync, rename)
// so the same version and content are not asked about again.

// TypeNotAccepted is the error type of an update that adds capabilities on
// a client without a policy server, not accepted by the user (policy
// layer, exit 3).
const TypeNotAccepted = "capabilities-not-accepted"

// admissionSource is a Policy that carries the admissions of the policy
// bundles in force (*policy.Engine).
type admissionSource interface {
	Admissions() []*policy.Admissions
}

// serverAdmissions returns the admissions of the policy servers in force
// (none without a server).
func (in *Installer) serverAdmissions() []*policy.Admissions {
	as, ok := in.o.Policy.(admissionSource)
	if !ok {
		return nil
	}
	return as.Admissions()
}

// checkAdmitted refuses v, fetched for id, when the policy server has not
// approved it, or, without a server, when it adds capabilities over old
// (the installed version; nil for a first install) and the user has not
// accepted them. accept records the acceptance (and lets it through) on a
// client without a server; it changes nothing with one.
func (in *Installer) checkAdmitted(ctx context.Context, g *graph, id plugin.ID, old *cache.Record, v *cache.Version, accept bool) error {
	if as := in.serverAdmissions(); len(as) > 0 {
		err := policy.CheckAll(as, id, v.Version, v.Digest)
		if err == nil || old == nil {
			return err
		}
		// The server has not seen this content yet: say what it adds
		// over the installed version, as far as the client can tell.
		var pe *plugin.Error
		if errors.As(err, &pe) && !strings.Contains(pe.Err.Error(), " adds ") {
			if adds, derr := in.capabilityDiff(g, id, old, v); derr == nil && len(adds) > 0 {
				pe.Err = fmt.Errorf("%w; over the installed %s it %s", pe.Err, old.Version, capability.Summary(adds))
			}
		}
		return err
	}
	if in.o.AcceptedFile == "" || old == nil || (old.Version == v.Version && old.Digest == v.Digest) {
		return nil
	}
	adds, err := in.capabilityDiff(g, id, old, v)
	if err != nil {
		return err
	}
	if len(adds) == 0 {
		return nil
	}
	acc, err := ReadAccepted(in.o.AcceptedFile)
	if err != nil {
		return err
	}
	if acc.Has(id, v.Version, v.Digest) {
		return nil
	}
	msgs := make([]string, len(adds))
	for i, c := range adds {
		msgs[i] = c.Message
	}
	if !accept {
		return &plugin.Error{Layer: plugin.LayerPolicy, Type: TypeNotAccepted, Object: id.String(),
			Err:  fmt.Errorf("%s adds capabilities over the installed %s: %s", v.Version, old.Version, strings.Join(msgs, "; ")),
			Hint: "the installed " + old.Version + " stays active; to take the new version with these capabilities, run: wharf update " + id.String() + " --accept"}
	}
	// Under the home's lock, read again: another process may have
	// recorded an acceptance since.
	return in.o.Cache.WithLock(ctx, func(context.Context) error {
		acc, err := ReadAccepted(in.o.AcceptedFile)
		if err != nil {
			return err
		}
		if acc.Has(id, v.Version, v.Digest) {
			return nil
		}
		acc.Accepted = append(acc.Accepted, AcceptedVersion{Plugin: id.String(), Version: v.Version, Digest: v.Digest, Adds: msgs, Over: old.Version, At: in.o.Now().UTC()})
		return acc.Write(in.o.AcceptedFile)
	})
}

// capabilityDiff is what v adds over old.
func (in *Installer) capabilityDiff(g *graph, id plugin.ID, old *cache.Record, v *cache.Version) ([]capability.Change, error) {
	entry, _ := g.entry(id)
	newRep, err := capability.Read(v.Path, entry)
	if err != nil {
		return nil, fmt.Errorf("read the capabilities of %s %s: %w", id, v.Version, err)
	}
	oldRep, err := capability.Read(old.InstallPath, entry)
	if err != nil {
		return nil, fmt.Errorf("read the capabilities of the installed %s %s: %w", id, old.Version, err)
	}
	return capability.Diff(&oldRep.Capabilities, &newRep.Capabilities), nil
}

// Accepted is what a user accepted on a client without a policy server:
// versions (with their content digest) that add capabilities over the one
// they replaced.
type Accepted struct {
	Version  int               `json:"version"` // 1
	Accepted []AcceptedVersion `json:"accepted"`
}

// AcceptedVersion is one accepted version.
type AcceptedVersion struct {
	Plugin  string    `json:"plugin"`
	Version string    `json:"version"`
	Digest  string    `json:"digest"`
	Adds    []string  `json:"adds"`
	Over    string    `json:"over"` // the version it replaced
	At      time.Time `json:"at"`
}

// maxAccepted bounds the records of one file.
const maxAccepted = 100000

// Has reports whether id at version with content digest was accepted.
func (a *Accepted) Has(id plugin.ID, version, digest string) bool {
	for _, r := range a.Accepted {
		if r.Plugin == id.String() && r.Version == version && r.Digest == digest {
			return true
		}
	}
	return false
}

// ParseAccepted reads an accepted-versions file's bytes; the error names
// the field and the file to fix.
func ParseAccepted(raw []byte, file string) (*Accepted, error) {
	bad := func(format string, args ...any) error {
		return plugin.Errorf(plugin.LayerIntent, plugin.TypeManifestParse, file,
			"fix or remove "+file+" (wharf update --accept records versions in it again)", format, args...)
	}
	var a Accepted
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, bad("%s: %v", file, err)
	}
	if a.Version != 1 {
		return nil, bad("%s: version %d; this wharf reads version 1", file, a.Version)
	}
	if len(a.Accepted) > maxAccepted {
		return nil, bad("%s: %d records, the limit is %d", file, len(a.Accepted), maxAccepted)
	}
	for i, r := range a.Accepted {
		if id, err := plugin.ParseID(r.Plugin); err != nil || id.String() != r.Plugin {
			return nil, bad("%s: accepted[%d].plugin: %q is not a plugin id (name@marketplace)", file, i, r.Plugin)
		}
		if r.Version == "" {
			return nil, bad("%s: accepted[%d].version is empty", file, i)
		}
		if !strings.HasPrefix(r.Digest, "w1:") {
			return nil, bad("%s: accepted[%d].digest: %q is not a w1: digest", file, i, r.Digest)
		}
	}
	return &a, nil
}

// ReadAccepted reads the accepted-versions file; a missing file is empty.
func ReadAccepted(file string) (*Accepted, error) {
	raw, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return &Accepted{Version: 1, Accepted: []AcceptedVersion{}}, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseAccepted(raw, file)
}

// Write writes a to file: temp file, fsync, rename, so a crash leaves the
// old file or the new one.
func (a *Accepted) Write(file string) error {
	a.Version = 1
	sort.SliceStable(a.Accepted, func(i, j int) bool { return a.Accepted[i].Plugin < a.Accepted[j].Plugin })
	raw, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(file, append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("record the accepted version in %s: %w", file, err)
	}
	return nil
}
