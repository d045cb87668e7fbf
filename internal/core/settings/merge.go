package settings

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/wharfhq/wharf/plugin"
)

// Scope is where a settings document comes from. Scopes are permission
// boundaries; precedence is managed > flag > local > project > user.
type Scope string

// The scopes.
const (
	ScopeUser    Scope = "user"
	ScopeProject Scope = "project"
	ScopeLocal   Scope = "local"
	ScopeFlag    Scope = "flag"
	ScopeManaged Scope = "managed"
)

// Precedence lists the scopes from lowest to highest.
var Precedence = []Scope{ScopeUser, ScopeProject, ScopeLocal, ScopeFlag, ScopeManaged}

func (s Scope) rank() int {
	for i, x := range Precedence {
		if x == s {
			return i
		}
	}
	return -1
}

// ParseScope accepts a scope name.
func ParseScope(s string) (Scope, error) {
	if Scope(s).rank() < 0 {
		return "", plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, s, "use one of user, project, local, flag, managed", "unknown scope %q", s)
	}
	return Scope(s), nil
}

// Document is one input settings document. Data nil with Missing set records
// that the file was looked for and is absent (it still takes part in the
// snapshot hash, so creating the file changes the hash).
type Document struct {
	Scope   Scope  `json:"scope"`
	Name    string `json:"name"` // file path, or a label for in-memory documents
	Data    []byte `json:"-"`
	Missing bool   `json:"missing,omitempty"`
	// Dir is the managed directory a managed document was read from:
	// each managed directory is its own policy layer (see ManagedLayers).
	Dir string `json:"dir,omitempty"`
}

// ManagedLayers groups the managed documents of docs by the managed
// directory they were read from, in reading order (the system directory
// first): one group per policy layer. A key whose value is a restriction
// merges across these groups by the tightening rules (allowlists
// intersect, blocklists and flags unite), never by Merge's, under which a
// later document would win.
func ManagedLayers(docs []Document) [][]Document {
	var out [][]Document
	for _, d := range docs {
		if d.Scope != ScopeManaged {
			continue
		}
		if n := len(out); n > 0 && out[n-1][0].Dir == d.Dir {
			out[n-1] = append(out[n-1], d)
			continue
		}
		out = append(out, []Document{d})
	}
	return out
}

// managedOnly keys are honoured only from managed settings (as in Claude
// Code); elsewhere they are ignored with a warning.
var managedOnly = []string{"strictKnownMarketplaces", "blockedMarketplaces",
	"strictPluginOnlyCustomization", "allowManagedHooksOnly", "disableSideloadFlags", "githubHost"}

// Merge combines documents. Higher precedence wins for scalars; within one
// scope (managed-settings.json then managed-settings.d fragments) later
// documents win. Arrays are concatenated and de-duplicated; the allowlist
// strictKnownMarketplaces is owned whole by the highest document that sets
// it. An invalid security value anywhere makes the merged value invalid.
// Documents that do not parse are reported as error Issues and skipped.
func Merge(docs []Document) *Settings {
	ordered := append([]Document(nil), docs...)
	sort.SliceStable(ordered, func(i, j int) bool { return ordered[i].Scope.rank() < ordered[j].Scope.rank() })
	out := &Settings{}
	for _, d := range ordered {
		if d.Missing {
			continue
		}
		s, err := Parse(d.Name, d.Data)
		if err != nil {
			out.Issues = append(out.Issues, Issue{Severity: SeverityError, File: d.Name, Message: err.Error() + "; file skipped"})
			continue
		}
		if d.Scope != ScopeManaged {
			for _, k := range managedOnly {
				if isSet(s, k) {
					s.Issues = append(s.Issues, Issue{Severity: SeverityWarning, File: d.Name, Field: k,
						Message: fmt.Sprintf("only honoured in managed settings; ignored in %s scope", d.Scope)})
					clearKey(s, k)
				}
			}
			for _, k := range CapabilityKeys {
				if _, ok := s.Unknown[k]; ok {
					s.Issues = append(s.Issues, Issue{Severity: SeverityWarning, File: d.Name, Field: k,
						Message: fmt.Sprintf("only honoured in managed settings; ignored in %s scope", d.Scope)})
					delete(s.Unknown, k)
				}
			}
		}
		out.mergeFrom(s)
	}
	return out
}

func isSet(s *Settings, k string) bool {
	switch k {
	case "strictKnownMarketplaces":
		return s.StrictKnownMarketplaces.Set
	case "blockedMarketplaces":
		return s.BlockedMarketplaces.Set
	case "strictPluginOnlyCustomization":
		return s.StrictPluginOnlyCustomization.Set
	case "allowManagedHooksOnly":
		return s.AllowManagedHooksOnly.Set
	case "disableSideloadFlags":
		return s.DisableSideloadFlags.Set
	case "githubHost":
		return s.GitHubHost != ""
	}
	return false
}

func clearKey(s *Settings, k string) {
	switch k {
	case "strictKnownMarketplaces":
		s.StrictKnownMarketplaces = SourceList{}
	case "blockedMarketplaces":
		s.BlockedMarketplaces = SourceList{}
	case "strictPluginOnlyCustomization":
		s.StrictPluginOnlyCustomization = SurfaceLock{}
	case "allowManagedHooksOnly":
		s.AllowManagedHooksOnly = Flag{}
	case "disableSideloadFlags":
		s.DisableSideloadFlags = Flag{}
	case "githubHost":
		s.GitHubHost = ""
	}
}

// mergeFrom merges s, of higher or equal precedence, into m.
func (m *Settings) mergeFrom(s *Settings) {
	m.Issues = append(m.Issues, s.Issues...)
	m.mergeEnabled(s)
	if s.ExtraKnownMarketplaces != nil {
		if m.ExtraKnownMarketplaces == nil {
			m.ExtraKnownMarketplaces = map[string]KnownMarketplace{}
		}
		for k, v := range s.ExtraKnownMarketplaces {
			m.ExtraKnownMarketplaces[k] = v
		}
	}
	if s.StrictKnownMarketplaces.Set {
		m.StrictKnownMarketplaces = s.StrictKnownMarketplaces
	}
	if s.BlockedMarketplaces.Set {
		m.BlockedMarketplaces.unite(s.BlockedMarketplaces)
	}
	if s.StrictPluginOnlyCustomization.Set {
		m.StrictPluginOnlyCustomization = s.StrictPluginOnlyCustomization
	}
	if s.AllowCrossMarketplaceDependenciesOn.Set {
		c := &m.AllowCrossMarketplaceDependenciesOn
		c.Set = true
		c.Invalid = c.Invalid || s.AllowCrossMarketplaceDependenciesOn.Invalid
		for _, n := range s.AllowCrossMarketplaceDependenciesOn.Names {
			if !contains(c.Names, n) {
				c.Names = append(c.Names, n)
			}
		}
	}
	if s.AllowManagedHooksOnly.Set {
		m.AllowManagedHooksOnly = s.AllowManagedHooksOnly
	}
	if s.DisableSideloadFlags.Set {
		m.DisableSideloadFlags = s.DisableSideloadFlags
	}
	if s.GitHubHost != "" {
		m.GitHubHost = s.GitHubHost
	}
	if s.RequireSignatures.Set {
		r := &m.RequireSignatures
		r.Set = true
		r.Invalid = r.Invalid || s.RequireSignatures.Invalid
		if r.Keys == nil {
			r.Keys = map[string][]string{}
		}
		for mkt, keys := range s.RequireSignatures.Keys {
			r.Keys[mkt] = dedup(append(r.Keys[mkt], keys...))
		}
		for _, mkt := range s.RequireSignatures.InvalidMarketplaces {
			if !contains(r.InvalidMarketplaces, mkt) {
				r.InvalidMarketplaces = append(r.InvalidMarketplaces, mkt)
			}
		}
	}
	if s.LegacySignatureKeys.Set {
		l := &m.LegacySignatureKeys
		l.Set = true
		l.Invalid = l.Invalid || s.LegacySignatureKeys.Invalid
		l.Keys = dedup(append(l.Keys, s.LegacySignatureKeys.Keys...))
	}
	if s.Hooks != nil {
		m.Hooks = s.Hooks
	}
	if s.MCPServers != nil {
		if m.MCPServers == nil {
			m.MCPServers = map[string]json.RawMessage{}
		}
		for k, v := range s.MCPServers {
			m.MCPServers[k] = v
		}
	}
	if s.Unknown != nil {
		if m.Unknown == nil {
			m.Unknown = map[string]json.RawMessage{}
		}
		for k, v := range s.Unknown {
			m.Unknown[k] = v
		}
	}
}

// mergeEnabled applies the enabledPlugins of s, of higher or equal
// precedence, to m: the higher document naming a plugin wins, and a value
// that is not a boolean (EnabledInvalid) replaces a valid one like any other.
func (m *Settings) mergeEnabled(s *Settings) {
	if s.EnabledPlugins != nil {
		if m.EnabledPlugins == nil {
			m.EnabledPlugins = map[plugin.ID]bool{}
		}
		for id, v := range s.EnabledPlugins {
			m.EnabledPlugins[id] = v
		}
	}
	for _, id := range s.EnabledInvalid {
		delete(m.EnabledPlugins, id)
		if !containsID(m.EnabledInvalid, id) {
			m.EnabledInvalid = append(m.EnabledInvalid, id)
		}
	}
	// A later valid value replaces an earlier invalid one.
	kept := m.EnabledInvalid[:0]
	for _, id := range m.EnabledInvalid {
		if _, ok := s.EnabledPlugins[id]; !ok {
			kept = append(kept, id)
		}
	}
	m.EnabledInvalid = kept
}

// unite adds the entries of o that l does not hold yet, in o's order: a
// blocklist is the union of every document's. An invalid o makes l invalid.
func (l *SourceList) unite(o SourceList) {
	l.Set = true
	l.Invalid = l.Invalid || o.Invalid
	l.Rejected += o.Rejected
	have := make(map[string]bool, len(l.Entries))
	for _, e := range l.Entries {
		have[e.Key()] = true
	}
	for _, e := range o.Entries {
		if k := e.Key(); !have[k] {
			have[k] = true
			l.Entries = append(l.Entries, e)
		}
	}
}

func containsID(l []plugin.ID, id plugin.ID) bool {
	for _, x := range l {
		if x == id {
			return true
		}
	}
	return false
}

// Snapshot is the merged view of every input document, with a hash over all
// of them. Hash changes whenever any input byte changes, or a file appears or
// disappears; use it as a cache key.
type Snapshot struct {
	Docs []Document
	// Merged is Merge over every document: the scopes' enabledPlugins,
	// hooks and servers as a user sees them. Its managed restrictions
	// merge the managed directories by Merge's rules, not across layers:
	// decisions come from policy (or, for keys the agent reads, from
	// ManagedLayers), never from them.
	Merged *Settings
	Hash   string
}

// NewSnapshot merges docs and hashes them. The hash is computed from the same
// docs slice that Merge reads, so nothing the merge depends on is left out.
func NewSnapshot(docs []Document) *Snapshot {
	return &Snapshot{Docs: docs, Merged: Merge(docs), Hash: HashDocuments(docs)}
}

// HashDocuments is sha256 over each document's scope, name, presence and
// bytes, length-prefixed so that no two document lists hash alike.
func HashDocuments(docs []Document) string {
	h := sha256.New()
	var n [8]byte
	put := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for _, d := range docs {
		put([]byte(d.Scope))
		put([]byte(d.Name))
		if d.Missing {
			put([]byte{0})
		} else {
			put([]byte{1})
			put(d.Data)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
