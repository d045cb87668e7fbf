package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/wharfhq/wharf/plugin"
)

// Admission modes: how a new version of a plugin becomes approved.
const (
	// ModeAuto approves a new version without a person when it adds no
	// capability over the last approved one; a version that adds one is
	// held for review. A plugin's first version the server sees is
	// approved as the baseline (the policy already admits the plugin by
	// name). The default.
	ModeAuto = "auto"
	// ModeReview holds every new version, the first one too, until an
	// administrator approves it.
	ModeReview = "review"
	// ModeOpen approves nothing and holds nothing: any version the policy
	// allows may be installed.
	ModeOpen = "open"
	// DefaultMode is the mode of a marketplace and a plugin nobody set.
	DefaultMode = ModeAuto
)

// ValidMode reports whether m names an admission mode.
func ValidMode(m string) bool { return m == ModeAuto || m == ModeReview || m == ModeOpen }

// Version states in Admissions.
const (
	StateApproved = "approved"
	StateHeld     = "held"
	StateDenied   = "denied"
)

// TypeHeld is the error type of a plugin version the policy server has
// not approved: held for review, denied, or never admitted. Install and
// update refuse it (policy layer, exit 3).
const TypeHeld = "plugin-held"

// Admissions are the policy server's approvals as the signed bundle
// carries them (data.json: wharf.admissions): the admission mode set per
// marketplace and per plugin, and each version the server has decided
// with its content digest. A client holding them installs only approved
// versions of the plugins they cover.
type Admissions struct {
	// MarketplaceModes and PluginModes are the modes set (keys: a
	// marketplace name, a plugin id); a plugin's own mode wins over its
	// marketplace's, and DefaultMode applies to the rest.
	MarketplaceModes map[string]string `json:"marketplaceModes,omitempty"`
	PluginModes      map[string]string `json:"pluginModes,omitempty"`
	// Versions are the versions decided, sorted by plugin, then version,
	// then digest.
	Versions []AdmittedVersion `json:"versions,omitempty"`
}

// AdmittedVersion is one version of a plugin the server has decided.
type AdmittedVersion struct {
	Plugin  string `json:"plugin"` // name@marketplace
	Version string `json:"version"`
	Digest  string `json:"digest"` // w1: content digest
	State   string `json:"state"`  // approved, held or denied
	// Adds is what the version adds over the last approved one (held and
	// denied versions), as capability.Diff words it.
	Adds []string `json:"adds,omitempty"`
	Note string   `json:"note,omitempty"` // the administrator's, on a decision
}

// Empty reports whether a holds nothing (no mode set, no version decided).
func (a *Admissions) Empty() bool {
	return a == nil || (len(a.MarketplaceModes) == 0 && len(a.PluginModes) == 0 && len(a.Versions) == 0)
}

// Mode is the admission mode of id.
func (a *Admissions) Mode(id plugin.ID) string {
	if a == nil {
		return DefaultMode
	}
	if m, ok := a.PluginModes[id.String()]; ok {
		return m
	}
	if m, ok := a.MarketplaceModes[id.Source]; ok {
		return m
	}
	return DefaultMode
}

// Sort puts the versions in their canonical order.
func (a *Admissions) Sort() {
	sort.Slice(a.Versions, func(i, j int) bool {
		x, y := a.Versions[i], a.Versions[j]
		if x.Plugin != y.Plugin {
			return x.Plugin < y.Plugin
		}
		if x.Version != y.Version {
			return x.Version < y.Version
		}
		return x.Digest < y.Digest
	})
}

// Check reports whether id at version, whose content digest is digest,
// may be installed: nil when it may, else a *plugin.Error of type
// TypeHeld saying why (held with what it adds, denied with the note, or
// not approved at all) and which versions are approved.
//
// A version is admitted when its plugin's mode is open, when an approved
// version has the same version and digest, or, in auto mode, when the
// server has decided no version of the plugin yet (it admits the first
// one it sees).
func (a *Admissions) Check(id plugin.ID, version, digest string) error {
	if a == nil {
		return nil
	}
	mode := a.Mode(id)
	if mode == ModeOpen {
		return nil
	}
	var mine []AdmittedVersion
	for _, v := range a.Versions {
		if v.Plugin == id.String() {
			mine = append(mine, v)
		}
	}
	var approved []string
	var match *AdmittedVersion
	for i, v := range mine {
		if v.State == StateApproved {
			if v.Version == version && v.Digest == digest {
				return nil
			}
			approved = append(approved, v.Version)
		}
		if v.Version == version && v.Digest == digest {
			match = &mine[i]
		}
	}
	if len(mine) == 0 && mode == ModeAuto {
		return nil
	}
	return HeldError(id, version, match, approved, mode)
}

// HeldError is the error of id at version refused by the admissions: v is
// the server's record of that version (nil when the server has none),
// approved the approved versions of id, mode its admission mode.
func HeldError(id plugin.ID, version string, v *AdmittedVersion, approved []string, mode string) error {
	var msg string
	switch {
	case v != nil && v.State == StateDenied:
		msg = version + " was denied by an administrator"
		if v.Note != "" {
			msg += ": " + v.Note
		}
		if len(v.Adds) > 0 {
			msg += " (" + strings.Join(v.Adds, "; ") + ")"
		}
	case v != nil && len(v.Adds) > 0:
		msg = version + " is held for review: " + strings.Join(v.Adds, "; ")
	case v != nil:
		msg = version + " is held for review (admission mode " + mode + ")"
	default:
		msg = version + " is not approved by the policy server (admission mode " + mode + "; the server has not admitted this content)"
	}
	hint := "no version of " + id.String() + " is approved yet; ask an administrator to review it (GET /v1/approvals/pending)"
	if len(approved) > 0 {
		hint = "the approved version (" + strings.Join(approved, ", ") + ") stays installed and active, and the server's channels serve it; ask an administrator to review " + version + " (GET /v1/approvals/pending)"
	}
	return &plugin.Error{Layer: plugin.LayerPolicy, Type: TypeHeld, Object: id.String(), Err: errors.New(msg), Hint: hint}
}

// WriteVersion writes what a client acts on of a (modes; each version's
// plugin, version, digest, state, what it adds, note) to w, in a stable
// order, for a policy version that changes whenever they do. Nothing is
// written for empty admissions.
func (a *Admissions) WriteVersion(w io.Writer) {
	if a.Empty() {
		return
	}
	for _, k := range sortedKeys(a.MarketplaceModes) {
		fmt.Fprintf(w, "mode marketplace %q %q\n", k, a.MarketplaceModes[k])
	}
	for _, k := range sortedKeys(a.PluginModes) {
		fmt.Fprintf(w, "mode plugin %q %q\n", k, a.PluginModes[k])
	}
	for _, v := range a.Versions {
		fmt.Fprintf(w, "admission %q %q %q %q %q %q\n", v.Plugin, v.Version, v.Digest, v.State, strings.Join(v.Adds, "\x00"), v.Note)
	}
}

// CheckAll checks id at version against every server's admissions: each
// must admit it (policy only tightens).
func CheckAll(as []*Admissions, id plugin.ID, version, digest string) error {
	for _, a := range as {
		if err := a.Check(id, version, digest); err != nil {
			return err
		}
	}
	return nil
}

// Limits on admissions read from a bundle.
const (
	MaxAdmittedVersions = 100000
	maxAdmissionString  = 4096
)

// ParseAdmissions reads admissions as a bundle's data.json holds them and
// checks every field: modes are known, plugins are ids, digests are w1:,
// states are known. The error names the field.
func ParseAdmissions(raw []byte) (*Admissions, error) {
	var a Admissions
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("admissions: %v", err)
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	return &a, nil
}

// Validate checks every field of a.
func (a *Admissions) Validate() error {
	for k, m := range a.MarketplaceModes {
		if k == "" || len(k) > 128 || strings.ContainsAny(k, "@/ \t\r\n") {
			return fmt.Errorf("admissions: marketplaceModes: %q is not a marketplace name", k)
		}
		if !ValidMode(m) {
			return fmt.Errorf("admissions: marketplaceModes[%s]: %q is not a mode (auto, review, open)", k, m)
		}
	}
	for k, m := range a.PluginModes {
		if id, err := plugin.ParseID(k); err != nil || id.String() != k {
			return fmt.Errorf("admissions: pluginModes: %q is not a plugin id (name@marketplace)", k)
		}
		if !ValidMode(m) {
			return fmt.Errorf("admissions: pluginModes[%s]: %q is not a mode (auto, review, open)", k, m)
		}
	}
	if len(a.Versions) > MaxAdmittedVersions {
		return fmt.Errorf("admissions: versions: %d entries, the limit is %d", len(a.Versions), MaxAdmittedVersions)
	}
	for i, v := range a.Versions {
		if id, err := plugin.ParseID(v.Plugin); err != nil || id.String() != v.Plugin {
			return fmt.Errorf("admissions: versions[%d].plugin: %q is not a plugin id (name@marketplace)", i, v.Plugin)
		}
		if v.Version == "" || len(v.Version) > 128 || strings.ContainsAny(v.Version, " \t\r\n") {
			return fmt.Errorf("admissions: versions[%d].version: %q is not a version", i, v.Version)
		}
		if !strings.HasPrefix(v.Digest, "w1:") {
			return fmt.Errorf("admissions: versions[%d].digest: %q is not a w1: digest", i, v.Digest)
		}
		switch v.State {
		case StateApproved, StateHeld, StateDenied:
		default:
			return fmt.Errorf("admissions: versions[%d].state: %q is not approved, held or denied", i, v.State)
		}
		if len(v.Note) > maxAdmissionString {
			return fmt.Errorf("admissions: versions[%d].note: longer than %d bytes", i, maxAdmissionString)
		}
		for j, s := range v.Adds {
			if len(s) > maxAdmissionString {
				return fmt.Errorf("admissions: versions[%d].adds[%d]: longer than %d bytes", i, j, maxAdmissionString)
			}
		}
	}
	return nil
}

// WithAdmissions sets the admissions of the policy bundles the engine's
// server layers came from (one per server; nil entries are skipped).
func WithAdmissions(as []*Admissions) Option {
	return func(e *Engine) { e.SetAdmissions(as) }
}

// SetAdmissions replaces the admissions in force (a reload that pulled new
// bundles sets them again).
func (e *Engine) SetAdmissions(as []*Admissions) {
	c := make([]*Admissions, 0, len(as))
	for _, a := range as {
		if a != nil {
			c = append(c, a)
		}
	}
	e.adms.Store(&c)
}

// Admissions returns the admissions in force, one per policy server whose
// bundle carries some; nil without any.
func (e *Engine) Admissions() []*Admissions {
	if e == nil {
		return nil
	}
	p := e.adms.Load()
	if p == nil {
		return nil
	}
	return *p
}
