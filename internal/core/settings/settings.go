package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/wharfhq/wharf/plugin"
)

// TypeSettingsInvalid is the *plugin.Error type of a settings file that cannot
// be used as written.
const TypeSettingsInvalid = "settings-invalid"

// Surface is a component surface that strictPluginOnlyCustomization can lock.
type Surface string

// The lockable surfaces.
const (
	SurfaceCommands   Surface = "commands"
	SurfaceSkills     Surface = "skills"
	SurfaceAgents     Surface = "agents"
	SurfaceHooks      Surface = "hooks"
	SurfaceMCPServers Surface = "mcp-servers"
)

// Surfaces lists every lockable surface in a fixed order.
var Surfaces = []Surface{SurfaceCommands, SurfaceSkills, SurfaceAgents, SurfaceHooks, SurfaceMCPServers}

// Severity of an Issue.
type Severity string

// Severities.
const (
	SeverityWarning Severity = "warning"
	SeverityError   Severity = "error"
)

// Issue is a problem found while decoding: where it is (file, line, field
// path) and what is wrong. Errors make a value unusable (security keys then
// fail closed); warnings (unknown keys, unknown surface names) are ignored
// input that is still reported.
type Issue struct {
	Severity Severity `json:"severity"`
	File     string   `json:"file"`
	Line     int      `json:"line,omitempty"`
	Field    string   `json:"field,omitempty"`
	Message  string   `json:"message"`
}

func (i Issue) String() string {
	loc := i.File
	if i.Line > 0 {
		loc = fmt.Sprintf("%s:%d", i.File, i.Line)
	}
	if i.Field != "" {
		return fmt.Sprintf("%s: %s: %s", loc, i.Field, i.Message)
	}
	return fmt.Sprintf("%s: %s", loc, i.Message)
}

// Flag is a boolean security key that may be absent or invalid.
type Flag struct {
	Set     bool
	Value   bool
	Invalid bool // present but not a boolean; policy treats it as true
}

// On reports whether the flag restricts: set to true, or invalid (fail closed).
func (f Flag) On() bool { return f.Invalid || (f.Set && f.Value) }

// SourceList is strictKnownMarketplaces or blockedMarketplaces.
type SourceList struct {
	Set     bool
	Invalid bool // not an array, or (for a blocklist) an entry that cannot be read
	Entries []PolicySource
	// Rejected counts entries that could not be read (reported as Issues).
	Rejected int
}

// SurfaceLock is strictPluginOnlyCustomization: true, or a list of surfaces.
type SurfaceLock struct {
	Set     bool
	All     bool // true, or invalid (fail closed: every surface locked)
	Invalid bool
	List    []Surface // known surfaces of the list form; unknown names are warnings
}

// Locked reports whether surface s is locked.
func (l SurfaceLock) Locked(s Surface) bool {
	if l.All || l.Invalid {
		return true
	}
	for _, x := range l.List {
		if x == s {
			return true
		}
	}
	return false
}

// NameList is a list of marketplace names (allowCrossMarketplaceDependenciesOn).
type NameList struct {
	Set     bool
	Invalid bool
	Names   []string
}

// Signatures is wharf's requireSignatures: marketplace name → accepted key ids.
type Signatures struct {
	Set     bool
	Invalid bool // not an object: every marketplace requires a signature no key can give
	Keys    map[string][]string
	// InvalidMarketplaces have a value that is not a list of key ids; they
	// require a signature that no key can give.
	InvalidMarketplaces []string
}

// KeyList is a list of signing keys (legacySignatureKeys): key ids (16 hex
// characters) or full sha256 fingerprints (64), lowercase.
type KeyList struct {
	Set     bool
	Invalid bool // not a list: it opts no key in (fail closed)
	Keys    []string
}

// KnownMarketplace is one entry of extraKnownMarketplaces.
type KnownMarketplace struct {
	Source     plugin.MarketplaceSource `json:"source"`
	AutoUpdate *bool                    `json:"autoUpdate,omitempty"`
}

// Settings is one decoded settings document, or the merge of several.
type Settings struct {
	EnabledPlugins map[plugin.ID]bool
	// EnabledInvalid lists plugins whose enabledPlugins value is not a
	// boolean; in managed settings policy treats them as forced off.
	EnabledInvalid []plugin.ID

	ExtraKnownMarketplaces map[string]KnownMarketplace

	StrictKnownMarketplaces             SourceList
	BlockedMarketplaces                 SourceList
	StrictPluginOnlyCustomization       SurfaceLock
	AllowCrossMarketplaceDependenciesOn NameList
	AllowManagedHooksOnly               Flag
	DisableSideloadFlags                Flag
	RequireSignatures                   Signatures
	// GitHubHost is githubHost: in managed settings, the GitHub host that
	// the layer's {"source":"github"} and "owner/*" entries mean
	// ("host[:port]" or a base URL; "" is github.com). Only managed layers
	// give it a meaning: the user's GitHub host never moves a managed entry.
	GitHubHost string
	// LegacySignatureKeys (wharf, managed) opts keys in to satisfying this
	// layer's requireSignatures with old-form signatures (over the bare
	// digest): key ids or sha256 fingerprints of their public keys.
	LegacySignatureKeys KeyList

	// Hooks and MCPServers are kept as written; the agent decodes them.
	Hooks      json.RawMessage
	MCPServers map[string]json.RawMessage

	// Unknown holds keys wharf does not interpret (Claude Code keys such as
	// "permissions" or "model"): kept, reported as warnings only when they
	// look like a misspelled wharf key.
	Unknown map[string]json.RawMessage

	Issues []Issue
}

// Err returns the error-severity issues as one *plugin.Error, or nil.
func (s *Settings) Err() error {
	var msgs []string
	for _, i := range s.Issues {
		if i.Severity == SeverityError {
			msgs = append(msgs, i.String())
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return &plugin.Error{Layer: plugin.LayerIntent, Type: TypeSettingsInvalid,
		Err:  errors.New(strings.Join(msgs, "\n")),
		Hint: "fix the named field in the settings file (see docs/policy.md for each key's form)"}
}

// Warnings returns the issues as strings, in order.
func (s *Settings) Warnings() []string {
	out := make([]string, 0, len(s.Issues))
	for _, i := range s.Issues {
		out = append(out, i.String())
	}
	return out
}

// knownKeys are the keys wharf reads. Claude Code has many more settings keys
// (permissions, model, env, ...): those are kept and not warned about unless
// they are within a small edit distance of a wharf key, which is how a
// misspelled security key gets noticed instead of silently ignored.
var knownKeys = []string{
	"enabledPlugins", "extraKnownMarketplaces", "strictKnownMarketplaces",
	"blockedMarketplaces", "strictPluginOnlyCustomization",
	"allowCrossMarketplaceDependenciesOn", "allowManagedHooksOnly",
	"disableSideloadFlags", "requireSignatures", "legacySignatureKeys", "hooks", "mcpServers",
	"githubHost",
}

// securityKeys fail closed when their value cannot be trusted.
var securityKeys = map[string]bool{
	"strictKnownMarketplaces": true, "blockedMarketplaces": true, "strictPluginOnlyCustomization": true,
	"allowCrossMarketplaceDependenciesOn": true, "allowManagedHooksOnly": true, "disableSideloadFlags": true,
	"requireSignatures": true, "legacySignatureKeys": true,
	"deniedCapabilities": true, "requireDeclaredHosts": true, "deniedFindings": true,
}

// claudeKeys are Claude Code settings keys that are not wharf's business but
// are legitimate in a shared settings file; they are preserved silently.
var claudeKeys = map[string]bool{
	"$schema": true, "permissions": true, "model": true, "env": true, "apiKeyHelper": true,
	"cleanupPeriodDays": true, "includeCoAuthoredBy": true, "statusLine": true,
	"outputStyle": true, "forceLoginMethod": true, "enableAllProjectMcpServers": true,
	"enabledMcpjsonServers": true, "disabledMcpjsonServers": true, "disableAllHooks": true,
	"awsAuthRefresh": true, "awsCredentialExport": true, "theme": true, "spinnerTipsEnabled": true,
	"allowedHttpHookUrls": true, "httpHookAllowedEnvVars": true,
	// Read by the agent (project-folder trust, managed settings): kept here.
	"trustedProjectFolders": true, "disableProjectCode": true,
}

// serverKeys name the policy server in managed settings, say whether a
// server layer's denials are waivable (allowWaivers), or pin MCP tool
// definitions (mcpToolPins); the policy package reads and checks them
// (policy.ManagedServers, policy.Waiver, Engine.ToolPins).
var serverKeys = map[string]bool{"policyUrl": true, "policyKey": true, "maxAge": true, "allowWaivers": true, "mcpToolPins": true}

// CapabilityKeys deny plugins by what their trees can do; the policy
// package reads and checks them (see policy.KeyDeniedCapabilities). They
// are kept as written, in Unknown, and honoured in managed settings only.
var CapabilityKeys = []string{"deniedCapabilities", "requireDeclaredHosts", "deniedFindings"}

type decoder struct {
	file  string
	data  []byte
	lines []int // offsets of line starts
	s     *Settings
}

func (d *decoder) line(off int64) int {
	if d.lines == nil {
		d.lines = []int{0}
		for i, c := range d.data {
			if c == '\n' {
				d.lines = append(d.lines, i+1)
			}
		}
	}
	return sort.Search(len(d.lines), func(i int) bool { return int64(d.lines[i]) > off })
}

func (d *decoder) issue(sev Severity, off int64, field, format string, args ...any) {
	d.s.Issues = append(d.s.Issues, Issue{Severity: sev, File: d.file, Line: d.line(off), Field: field, Message: fmt.Sprintf(format, args...)})
}

// Parse decodes one settings document. file names it in messages. A document
// that is not a JSON object is an error (*plugin.Error, layer intent); every
// other problem becomes an Issue on the returned Settings, and the affected
// value is left unset (ordinary keys) or marked invalid (security keys).
func Parse(file string, data []byte) (*Settings, error) {
	s := &Settings{}
	d := &decoder{file: file, data: data, s: s}
	if len(bytes.TrimSpace(data)) == 0 {
		return s, nil // an empty file is an empty document
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	syntax := func(err error) error {
		off := dec.InputOffset()
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = se.Offset
		}
		return &plugin.Error{Layer: plugin.LayerIntent, Type: TypeSettingsInvalid, Object: file,
			Err:  fmt.Errorf("%s:%d: not valid JSON: %v", file, d.line(off), err),
			Hint: "fix the JSON syntax of " + file}
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, syntax(err)
	}
	if delim, ok := tok.(json.Delim); !ok || delim != '{' {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: TypeSettingsInvalid, Object: file,
			Err: fmt.Errorf("%s:1: settings must be a JSON object", file), Hint: "wrap the settings in { ... }"}
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntax(err)
		}
		off := dec.InputOffset() - 1 // the key's closing quote: its line
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, syntax(err)
		}
		if seen[key] {
			d.issue(SeverityError, off, key, "key appears twice; remove one (JSON readers disagree on which wins)")
			if securityKeys[key] {
				// Which value a client honours is unknowable: fail closed.
				d.key(off, key, json.RawMessage("null"))
			}
			continue
		}
		seen[key] = true
		d.key(off, key, raw)
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntax(err)
	}
	if dec.More() {
		return nil, syntax(errors.New("data after the top-level object"))
	}
	if _, err := dec.Token(); err == nil {
		return nil, syntax(errors.New("data after the top-level object"))
	}
	return s, nil
}

func (d *decoder) key(off int64, key string, raw json.RawMessage) {
	s := d.s
	switch key {
	case "enabledPlugins":
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			d.issue(SeverityError, off, key, "must be an object {\"plugin@marketplace\": true|false}, got %s", plugin.JSONKind(raw))
			return
		}
		s.EnabledPlugins = map[plugin.ID]bool{}
		for _, k := range sortedKeys(m) {
			field := fmt.Sprintf("enabledPlugins[%q]", k)
			id, err := plugin.ParseID(k)
			if err != nil {
				d.issue(SeverityError, off, field, "key is not a plugin id: %v", errors.Unwrap(err))
				continue
			}
			var b bool
			if err := json.Unmarshal(m[k], &b); err != nil {
				d.issue(SeverityError, off, field, "must be true or false, got %s", plugin.JSONKind(m[k]))
				s.EnabledInvalid = append(s.EnabledInvalid, id)
				continue
			}
			s.EnabledPlugins[id] = b
		}
	case "extraKnownMarketplaces":
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			d.issue(SeverityError, off, key, "must be an object {name: {source, autoUpdate?}}, got %s", plugin.JSONKind(raw))
			return
		}
		s.ExtraKnownMarketplaces = map[string]KnownMarketplace{}
		for _, name := range sortedKeys(m) {
			field := fmt.Sprintf("extraKnownMarketplaces[%q]", name)
			if err := plugin.ValidateName(name); err != nil {
				d.issue(SeverityError, off, field, "marketplace name: %v", err)
				continue
			}
			var entry map[string]json.RawMessage
			if err := json.Unmarshal(m[name], &entry); err != nil || entry == nil {
				d.issue(SeverityError, off, field, "must be an object {source, autoUpdate?}, got %s", plugin.JSONKind(m[name]))
				continue
			}
			var km KnownMarketplace
			ok := true
			for _, f := range sortedKeys(entry) {
				switch f {
				case "source":
					src, err := plugin.DecodeMarketplaceSource(entry[f])
					if err != nil {
						d.issue(SeverityError, off, field+".source", "%v", err)
						ok = false
					}
					km.Source = src
				case "autoUpdate":
					var b bool
					if err := json.Unmarshal(entry[f], &b); err != nil {
						d.issue(SeverityError, off, field+".autoUpdate", "must be true or false, got %s", plugin.JSONKind(entry[f]))
						ok = false
					}
					km.AutoUpdate = &b
				default:
					d.issue(SeverityWarning, off, field+"."+f, "unknown field, ignored")
				}
			}
			if _, has := entry["source"]; !has {
				d.issue(SeverityError, off, field, "needs a \"source\"")
				ok = false
			}
			if ok {
				s.ExtraKnownMarketplaces[name] = km
			}
		}
	case "strictKnownMarketplaces":
		s.StrictKnownMarketplaces = d.sourceList(off, key, raw, false)
	case "blockedMarketplaces":
		s.BlockedMarketplaces = d.sourceList(off, key, raw, true)
	case "strictPluginOnlyCustomization":
		s.StrictPluginOnlyCustomization = d.surfaceLock(off, key, raw)
	case "allowCrossMarketplaceDependenciesOn":
		s.AllowCrossMarketplaceDependenciesOn = d.nameList(off, key, raw)
	case "allowManagedHooksOnly":
		s.AllowManagedHooksOnly = d.flag(off, key, raw)
	case "disableSideloadFlags":
		s.DisableSideloadFlags = d.flag(off, key, raw)
	case "requireSignatures":
		s.RequireSignatures = d.signatures(off, key, raw)
	case "githubHost":
		var h string
		if err := json.Unmarshal(raw, &h); err != nil {
			d.issue(SeverityError, off, key, "must be a host such as \"ghe.corp.example\" or a URL such as \"https://ghe.corp.example\", got %s", plugin.JSONKind(raw))
			return
		}
		if _, _, ok := plugin.GitHubHostPort(h); !ok {
			d.issue(SeverityError, off, key, "%q is not a host such as \"ghe.corp.example\" or a URL such as \"https://ghe.corp.example\"; github entries mean github.com", h)
			return
		}
		s.GitHubHost = strings.TrimSpace(h)
	case "legacySignatureKeys":
		s.LegacySignatureKeys = d.keyList(off, key, raw)
	case "hooks":
		if kind := plugin.JSONKind(raw); kind != "an object" {
			d.issue(SeverityError, off, key, "must be an object {event: [matchers]}, got %s", kind)
			return
		}
		s.Hooks = append(json.RawMessage(nil), raw...)
	case "mcpServers":
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			d.issue(SeverityError, off, key, "must be an object {name: server}, got %s", plugin.JSONKind(raw))
			return
		}
		s.MCPServers = map[string]json.RawMessage{}
		for _, name := range sortedKeys(m) {
			if kind := plugin.JSONKind(m[name]); kind != "an object" {
				d.issue(SeverityError, off, fmt.Sprintf("mcpServers[%q]", name), "must be an object {command, args?, env?} or {type, url}, got %s", kind)
				continue
			}
			s.MCPServers[name] = m[name]
		}
	default:
		if s.Unknown == nil {
			s.Unknown = map[string]json.RawMessage{}
		}
		s.Unknown[key] = append(json.RawMessage(nil), raw...)
		if claudeKeys[key] || serverKeys[key] || contains(CapabilityKeys, key) {
			return
		}
		if near := nearKey(key); near != "" {
			d.issue(SeverityWarning, off, key, "unknown key, ignored; did you mean %q?", near)
		} else {
			d.issue(SeverityWarning, off, key, "unknown key, ignored")
		}
	}
}

func (d *decoder) flag(off int64, key string, raw json.RawMessage) Flag {
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		d.issue(SeverityError, off, key, "must be true or false, got %s; treated as true (fail closed)", plugin.JSONKind(raw))
		return Flag{Set: true, Invalid: true}
	}
	return Flag{Set: true, Value: b}
}

func (d *decoder) sourceList(off int64, key string, raw json.RawMessage, blocklist bool) SourceList {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		if blocklist {
			d.issue(SeverityError, off, key, "must be an array of marketplace sources, got %s; every marketplace is blocked until it is fixed (fail closed)", plugin.JSONKind(raw))
		} else {
			d.issue(SeverityError, off, key, "must be an array of marketplace sources, got %s; no marketplace is allowed until it is fixed (fail closed)", plugin.JSONKind(raw))
		}
		return SourceList{Set: true, Invalid: true}
	}
	l := SourceList{Set: true, Entries: []PolicySource{}}
	for i, it := range items {
		src, err := ParsePolicySource(it)
		if err != nil {
			l.Rejected++
			if blocklist {
				// A blocklist entry that cannot be read might have matched
				// anything: block everything rather than open a hole.
				l.Invalid = true
				d.issue(SeverityError, off, fmt.Sprintf("%s[%d]", key, i), "%v; every marketplace is blocked until it is fixed (fail closed)", err)
			} else {
				d.issue(SeverityError, off, fmt.Sprintf("%s[%d]", key, i), "%v; this entry allows nothing (fail closed)", err)
			}
			continue
		}
		l.Entries = append(l.Entries, src)
	}
	return l
}

func (d *decoder) surfaceLock(off int64, key string, raw json.RawMessage) SurfaceLock {
	var b bool
	if err := json.Unmarshal(raw, &b); err == nil {
		return SurfaceLock{Set: true, All: b}
	}
	var names []json.RawMessage
	if err := json.Unmarshal(raw, &names); err != nil || names == nil {
		d.issue(SeverityError, off, key, "must be true, false or a list of surfaces (commands, skills, agents, hooks, mcp-servers), got %s; every surface is locked (fail closed)", plugin.JSONKind(raw))
		return SurfaceLock{Set: true, All: true, Invalid: true}
	}
	l := SurfaceLock{Set: true, List: []Surface{}}
	for i, n := range names {
		var name string
		if err := json.Unmarshal(n, &name); err != nil {
			d.issue(SeverityError, off, fmt.Sprintf("%s[%d]", key, i), "must be a surface name string, got %s; every surface is locked (fail closed)", plugin.JSONKind(n))
			l.All, l.Invalid = true, true
			continue
		}
		known := false
		for _, s := range Surfaces {
			if string(s) == name {
				known = true
			}
		}
		if !known {
			d.issue(SeverityWarning, off, fmt.Sprintf("%s[%d]", key, i), "unknown surface %q ignored (known: commands, skills, agents, hooks, mcp-servers)", name)
			continue
		}
		if !containsSurface(l.List, Surface(name)) {
			l.List = append(l.List, Surface(name))
		}
	}
	return l
}

func containsSurface(l []Surface, s Surface) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func (d *decoder) nameList(off int64, key string, raw json.RawMessage) NameList {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		d.issue(SeverityError, off, key, "must be an array of marketplace names, got %s; no marketplace is allowed (fail closed)", plugin.JSONKind(raw))
		return NameList{Set: true, Invalid: true}
	}
	l := NameList{Set: true, Names: []string{}}
	for i, it := range items {
		var name string
		if err := json.Unmarshal(it, &name); err != nil {
			d.issue(SeverityError, off, fmt.Sprintf("%s[%d]", key, i), "must be a marketplace name string, got %s; entry ignored (allows nothing)", plugin.JSONKind(it))
			continue
		}
		if err := plugin.ValidateName(name); err != nil {
			d.issue(SeverityError, off, fmt.Sprintf("%s[%d]", key, i), "%v; entry ignored (allows nothing)", err)
			continue
		}
		if !contains(l.Names, name) {
			l.Names = append(l.Names, name)
		}
	}
	return l
}

func (d *decoder) signatures(off int64, key string, raw json.RawMessage) Signatures {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		d.issue(SeverityError, off, key, "must be an object {\"marketplace\": [\"keyid\", ...]}, got %s; every install is refused until it is fixed (fail closed)", plugin.JSONKind(raw))
		return Signatures{Set: true, Invalid: true}
	}
	sig := Signatures{Set: true, Keys: map[string][]string{}}
	for _, mkt := range sortedKeys(m) {
		field := fmt.Sprintf("%s[%q]", key, mkt)
		if err := plugin.ValidateName(mkt); err != nil {
			d.issue(SeverityError, off, field, "marketplace name: %v; ignored", err)
			continue
		}
		var keys []string
		if err := json.Unmarshal(m[mkt], &keys); err != nil || keys == nil {
			d.issue(SeverityError, off, field, "must be a list of key ids, got %s; installs from %s are refused until it is fixed (fail closed)", plugin.JSONKind(m[mkt]), mkt)
			sig.InvalidMarketplaces = append(sig.InvalidMarketplaces, mkt)
			continue
		}
		sig.Keys[mkt] = dedup(keys)
	}
	return sig
}

func (d *decoder) keyList(off int64, key string, raw json.RawMessage) KeyList {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		d.issue(SeverityError, off, key, "must be an array of key ids or sha256 fingerprints, got %s; no key may use old-form signatures (fail closed)", plugin.JSONKind(raw))
		return KeyList{Set: true, Invalid: true}
	}
	l := KeyList{Set: true, Keys: []string{}}
	for i, it := range items {
		field := fmt.Sprintf("%s[%d]", key, i)
		var k string
		if err := json.Unmarshal(it, &k); err != nil {
			d.issue(SeverityError, off, field, "must be a key id string, got %s; entry ignored (opts no key in)", plugin.JSONKind(it))
			continue
		}
		if !keyRef(k) {
			d.issue(SeverityError, off, field, "%q is neither a key id (16 lowercase hex characters, as wharf keygen prints) nor a sha256 fingerprint (64); entry ignored (opts no key in)", k)
			continue
		}
		if !contains(l.Keys, k) {
			l.Keys = append(l.Keys, k)
		}
	}
	return l
}

// keyRef reports whether k is a key id or a sha256 fingerprint.
func keyRef(k string) bool {
	if len(k) != 16 && len(k) != 64 {
		return false
	}
	for _, c := range k {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func dedup(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// nearKey returns the wharf key within edit distance 3 of k (case-insensitive), or "".
func nearKey(k string) string {
	best, bestD := "", 4
	for _, known := range append(knownKeys[:len(knownKeys):len(knownKeys)], CapabilityKeys...) {
		if d := editDistance(strings.ToLower(k), strings.ToLower(known)); d < bestD {
			best, bestD = known, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
