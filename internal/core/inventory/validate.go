package inventory

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/wharfhq/wharf/internal/core/lazyre"
	"github.com/wharfhq/wharf/internal/core/toolpin"
	"github.com/wharfhq/wharf/plugin"
)

// ReportError is a report refused before anything was stored: Field names
// the offending JSON field with its index ("plugins[3].digest"), or is empty
// for the report as a whole.
type ReportError struct {
	Field   string
	Problem string
	Hint    string
	// TooLarge is set when the report exceeds MaxReportBytes.
	TooLarge bool
}

func (e *ReportError) Error() string {
	var b strings.Builder
	b.WriteString("inventory report")
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Problem)
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

func reportErr(field, hint, format string, args ...any) *ReportError {
	return &ReportError{Field: field, Problem: fmt.Sprintf(format, args...), Hint: hint}
}

// Field limits of a report.
const (
	maxLabel   = 255
	maxVersion = 128
	maxReason  = 1024
)

var (
	machineIDRE = lazyre.New(`^m-[0-9a-f]{32}$`)
	// A version as clients see it: a semver, a git commit, "unknown"...
	versionRE = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._+~-]*$`)
)

// Scopes a plugin can be installed at.
var scopes = []string{"user", "project", "local", "managed"}

var (
	kinds    = []string{KindWharf, KindWharfAgent, KindClaudeCode, KindCopilot, KindCodex, KindGemini, KindOpenCode}
	installs = []string{InstallUser, InstallDependency, InstallManaged, InstallSideloaded}
	states   = []string{StateActive, StateDisabled, StateDemoted, StateFailed, StateRevoked}
)

// ValidMachineID reports whether id has the shape of a machine id: "m-" and
// 32 lowercase hex digits.
func ValidMachineID(id string) bool { return machineIDRE.MatchString(id) }

// ValidDigest reports whether d is a w1: digest: "w1:" and the standard
// base64 of 32 bytes.
func ValidDigest(d string) bool {
	b64, ok := strings.CutPrefix(d, "w1:")
	if !ok || len(b64) != 44 {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	return err == nil && len(raw) == sha256.Size
}

// Decode reads one report as a client sends it: at most MaxReportBytes of
// JSON, no unknown fields, then Validate. Every failure is a *ReportError.
func Decode(r io.Reader) (Report, error) {
	raw, err := io.ReadAll(io.LimitReader(r, MaxReportBytes+1))
	if err != nil {
		return Report{}, reportErr("", "send it again", "reading the report: %v", err)
	}
	return DecodeBytes(raw)
}

// DecodeBytes is Decode over bytes in memory.
func DecodeBytes(raw []byte) (Report, error) {
	if len(raw) > MaxReportBytes {
		e := reportErr("", "a machine reports at most "+fmt.Sprint(MaxPlugins)+" plugins", "the report is larger than %d bytes", MaxReportBytes)
		e.TooLarge = true
		return Report{}, e
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return Report{}, reportErr("", "send a JSON object (see docs/server.md)", "the report is empty")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var rep Report
	if err := dec.Decode(&rep); err != nil {
		return Report{}, jsonErr(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Report{}, reportErr("", "send exactly one JSON object", "unexpected data after the report at byte %d", dec.InputOffset())
	}
	if err := Validate(&rep); err != nil {
		return Report{}, err
	}
	return rep, nil
}

func jsonErr(err error) *ReportError {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return reportErr("", "send the report as wharf inventory report builds it", "malformed JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return reportErr("", "send the whole report", "the JSON ends early")
	case errors.As(err, &te):
		return reportErr(te.Field, "see docs/server.md for the report's fields", "expected %s, got JSON %s", te.Type, te.Value)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
		return reportErr(strings.Trim(name, `"`), "see docs/server.md for the report's fields", "unknown field")
	}
	return reportErr("", "send the report as wharf inventory report builds it", "%s", msg)
}

// label checks a free-text label: valid UTF-8, printable, bounded.
func label(field, s string, max int) error {
	if len(s) > max {
		return reportErr(field, "", "%d bytes, more than %d", len(s), max)
	}
	if !utf8.ValidString(s) {
		return reportErr(field, "", "not valid UTF-8")
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return reportErr(field, "", "holds the unprintable character %U", r)
		}
	}
	return nil
}

func oneOf(field, v string, allowed []string) error {
	if !slices.Contains(allowed, v) {
		return reportErr(field, "one of: "+strings.Join(allowed, ", "), "%q is not a known value", v)
	}
	return nil
}

// Validate checks a decoded report: the machine id's shape, the client kind,
// and each plugin's id, version, digest, scope, install kind and state,
// within the limits, with no plugin listed twice at one scope. Plugins are
// sorted by id and scope, so equal inventories compare equal.
func Validate(r *Report) error {
	if !ValidMachineID(r.Machine.ID) {
		return reportErr("machine.id", "the id is \"m-\" and 32 lowercase hex digits, created once per home", "%q is not a machine id", trunc(r.Machine.ID))
	}
	for _, f := range []struct{ name, v string }{{"machine.hostname", r.Machine.Hostname}, {"machine.user", r.Machine.User}, {"machine.os", r.Machine.OS}} {
		if err := label(f.name, f.v, maxLabel); err != nil {
			return err
		}
	}
	if err := oneOf("client.kind", r.Client.Kind, kinds); err != nil {
		return err
	}
	if r.Client.Version == "" || len(r.Client.Version) > maxVersion || !versionRE.MatchString(r.Client.Version) {
		return reportErr("client.version", "the client's version, e.g. 1.4.0", "%q is not a version", trunc(r.Client.Version))
	}
	if len(r.Plugins) > MaxPlugins {
		return reportErr("plugins", "", "%d plugins, more than the limit of %d", len(r.Plugins), MaxPlugins)
	}
	for i := range r.Plugins {
		if err := validatePlugin(i, &r.Plugins[i]); err != nil {
			return err
		}
	}
	slices.SortFunc(r.Plugins, func(a, b Plugin) int {
		if c := strings.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		return strings.Compare(a.Scope, b.Scope)
	})
	for i := 1; i < len(r.Plugins); i++ {
		if p, q := r.Plugins[i-1], r.Plugins[i]; p.ID == q.ID && p.Scope == q.Scope {
			return reportErr("plugins", "list each installed plugin once per scope", "%s is listed twice at scope %s", p.ID, p.Scope)
		}
	}
	if r.Plugins == nil {
		r.Plugins = []Plugin{}
	}
	return ValidateMCP(r)
}

// ValidateMCP checks (and sorts) a report's mcpServers, as Validate does.
func ValidateMCP(r *Report) error {
	if len(r.MCPServers) > MaxMCPServers {
		return reportErr("mcpServers", "", "%d servers, more than the limit of %d", len(r.MCPServers), MaxMCPServers)
	}
	defBytes := 0
	for i := range r.MCPServers {
		m := &r.MCPServers[i]
		f := func(name string) string { return fmt.Sprintf("mcpServers[%d].%s", i, name) }
		id, err := plugin.ParseID(m.Plugin)
		if err != nil || id.String() != m.Plugin {
			return reportErr(f("plugin"), "write it as name@marketplace", "%q is not a plugin id", trunc(m.Plugin))
		}
		if err := toolpin.ValidServer(m.Server); err != nil {
			return reportErr(f("server"), "the server's name in the plugin's .mcp.json", "%v", err)
		}
		if !toolpin.ValidHash(m.ToolsHash) {
			return reportErr(f("toolsHash"), toolpin.Prefix+" and 64 lowercase hex digits", "%q is not a hash of tool definitions", trunc(m.ToolsHash))
		}
		if m.Pinned != "" && !toolpin.ValidHash(m.Pinned) {
			return reportErr(f("pinned"), toolpin.Prefix+" and 64 lowercase hex digits", "%q is not a hash of tool definitions", trunc(m.Pinned))
		}
		if m.Drift != (m.Pinned != "" && m.Pinned != m.ToolsHash) {
			return reportErr(f("drift"), "drift is true exactly when pinned is set and differs from toolsHash", "drift %v with toolsHash %s and pinned %q", m.Drift, trunc(m.ToolsHash), trunc(m.Pinned))
		}
		if err := validateTools(i, m); err != nil {
			return err
		}
		defBytes += DefinitionBytes(m.Tools)
		if defBytes > MaxToolDefinitionsIn {
			return reportErr(f("tools"), "report the hash alone for the servers past the limit", "the tool definitions of the report's servers exceed %d bytes", MaxToolDefinitionsIn)
		}
	}
	slices.SortFunc(r.MCPServers, func(a, b MCPServer) int {
		if c := strings.Compare(a.Plugin, b.Plugin); c != 0 {
			return c
		}
		return strings.Compare(a.Server, b.Server)
	})
	for i := 1; i < len(r.MCPServers); i++ {
		if p, q := r.MCPServers[i-1], r.MCPServers[i]; p.Plugin == q.Plugin && p.Server == q.Server {
			return reportErr("mcpServers", "list each plugin server once", "server %q of %s is listed twice", p.Server, p.Plugin)
		}
	}
	return nil
}

func validatePlugin(i int, p *Plugin) error {
	f := func(name string) string { return fmt.Sprintf("plugins[%d].%s", i, name) }
	id, err := plugin.ParseID(p.ID)
	if err != nil || id.String() != p.ID {
		return reportErr(f("id"), "write it as name@marketplace", "%q is not a plugin id", trunc(p.ID))
	}
	if p.Version != "" && (len(p.Version) > maxVersion || !versionRE.MatchString(p.Version)) {
		return reportErr(f("version"), "letters, digits and . _ + ~ -, at most 128 bytes", "%q is not a version", trunc(p.Version))
	}
	if p.Digest != "" && !ValidDigest(p.Digest) {
		return reportErr(f("digest"), "the w1: digest of the tree as installed (w1: and the base64 of a sha256)", "%q is not a w1: digest", trunc(p.Digest))
	}
	if err := oneOf(f("scope"), p.Scope, scopes); err != nil {
		return err
	}
	if err := oneOf(f("install"), p.Install, installs); err != nil {
		return err
	}
	if err := oneOf(f("state"), p.State, states); err != nil {
		return err
	}
	return label(f("reason"), p.Reason, maxReason)
}

func trunc(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// Hash identifies a validated report's content: the same machine, client
// and plugins give the same hash whenever the report was built.
func Hash(r Report) string {
	r.Created = time.Time{}
	raw, _ := json.Marshal(r) // a Report always marshals
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// validateTools checks the definitions a server's entry carries: within
// the bounds, each tool's name printable and unique, its schema JSON, and
// the whole hashing to the entry's toolsHash (a report cannot show
// definitions other than the ones its hash approves).
func validateTools(i int, m *MCPServer) error {
	if m.Tools == nil {
		return nil
	}
	f := func(j int, name string) string { return fmt.Sprintf("mcpServers[%d].tools[%d].%s", i, j, name) }
	if len(m.Tools) > MaxToolsPerServer {
		return reportErr(fmt.Sprintf("mcpServers[%d].tools", i), "report the hash alone for a server with more tools", "%d tools, more than the limit of %d", len(m.Tools), MaxToolsPerServer)
	}
	seen := make(map[string]bool, len(m.Tools))
	for j, t := range m.Tools {
		switch {
		case t.Name == "" || len(t.Name) > MaxToolNameBytes || !utf8.ValidString(t.Name):
			return reportErr(f(j, "name"), fmt.Sprintf("a tool's name is 1 to %d bytes of UTF-8", MaxToolNameBytes), "%q is not a tool name", trunc(t.Name))
		case strings.IndexFunc(t.Name, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) >= 0:
			return reportErr(f(j, "name"), "a tool's name has no spaces or control characters", "%q is not a tool name", trunc(t.Name))
		case seen[t.Name]:
			return reportErr(f(j, "name"), "list each tool once", "tool %q is listed twice", trunc(t.Name))
		case len(t.Description) > MaxToolDescription || !utf8.ValidString(t.Description):
			return reportErr(f(j, "description"), fmt.Sprintf("at most %d bytes of UTF-8", MaxToolDescription), "the description of %q is not valid UTF-8 or is longer than %d bytes", trunc(t.Name), MaxToolDescription)
		case len(t.InputSchema) > MaxToolSchemaBytes:
			return reportErr(f(j, "inputSchema"), "report the hash alone for a server whose schemas are larger", "the schema of %q is %d bytes, more than %d", trunc(t.Name), len(t.InputSchema), MaxToolSchemaBytes)
		}
		seen[t.Name] = true
	}
	h, err := toolpin.Hash(ToolDefinitions(m.Tools))
	if err != nil {
		return reportErr(fmt.Sprintf("mcpServers[%d].tools", i), "the definitions exactly as the server listed them", "%v", err)
	}
	if h != m.ToolsHash {
		return reportErr(fmt.Sprintf("mcpServers[%d].tools", i), "the definitions exactly as the server listed them", "the definitions hash to %s, not toolsHash %s", h, trunc(m.ToolsHash))
	}
	return nil
}
