// Package mcpregistry is the server's MCP registry (the MCP registry API,
// v0.1): the server.json documents it serves, named in the registry's
// reverse-DNS form, and the servers an administrator adds to it by hand,
// kept in the store (the contract test runs on bbolt and on etcd).
//
// The MCP servers of the plugins the server approves are derived, not
// stored: FromPlugin maps one plugin server to a server.json. What the
// registry lists is filtered by the policy's MCP server lists (Lists) and
// paged by an opaque cursor (Page).
package mcpregistry

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/wharfhq/wharf/internal/core/lazyre"
)

// SchemaURL is the server.json schema the documents follow.
const SchemaURL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

// PluginNamespacePrefix starts the namespace of every server derived from
// a plugin (io.wharf.<marketplace>/<plugin>-<server>); an administrator
// cannot add a server under it.
const PluginNamespacePrefix = "io.wharf."

// Limits, as the registry's schema sets them.
const (
	MinNameLen        = 3
	MaxNameLen        = 200
	MaxVersionLen     = 255
	MaxDescriptionLen = 100
	MaxTitleLen       = 100
	MaxURLLen         = 2048
	MaxItems          = 64 // packages, remotes, arguments, variables of one document
)

// Compiled on first use (lazyre), not at the start of every command that
// links this package.
var (
	nameRe    = lazyre.New(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`)
	urlTplRe  = lazyre.New(`^(https?://[^\s]+|\{[a-zA-Z_][a-zA-Z0-9_]*\}[^\s]*)$`)
	varNameRe = lazyre.New(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	sha256Re  = lazyre.New(`^[a-f0-9]{64}$`)
)

// Server is a server.json document (the registry's ServerDetail).
type Server struct {
	Schema      string      `json:"$schema,omitempty"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Title       string      `json:"title,omitempty"`
	Version     string      `json:"version"`
	Repository  *Repository `json:"repository,omitempty"`
	WebsiteURL  string      `json:"websiteUrl,omitempty"`
	Packages    []Package   `json:"packages,omitempty"`
	Remotes     []Transport `json:"remotes,omitempty"`
}

// Repository is where a server's source is.
type Repository struct {
	URL       string `json:"url"`
	Source    string `json:"source"`
	ID        string `json:"id,omitempty"`
	Subfolder string `json:"subfolder,omitempty"`
}

// Package is a server run from a package (npm, pypi, oci...).
type Package struct {
	RegistryType         string     `json:"registryType"`
	RegistryBaseURL      string     `json:"registryBaseUrl,omitempty"`
	Identifier           string     `json:"identifier"`
	Version              string     `json:"version,omitempty"`
	FileSHA256           string     `json:"fileSha256,omitempty"`
	RuntimeHint          string     `json:"runtimeHint,omitempty"`
	Transport            Transport  `json:"transport"`
	RuntimeArguments     []Argument `json:"runtimeArguments,omitempty"`
	PackageArguments     []Argument `json:"packageArguments,omitempty"`
	EnvironmentVariables []Input    `json:"environmentVariables,omitempty"`
}

// Transport is a package's transport (stdio, streamable-http, sse) or a
// remote's (streamable-http, sse, with variables).
type Transport struct {
	Type      string           `json:"type"`
	URL       string           `json:"url,omitempty"`
	Headers   []Input          `json:"headers,omitempty"`
	Variables map[string]Input `json:"variables,omitempty"`
}

// Input is an input value: an environment variable or header (Name set),
// or a variable.
type Input struct {
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	IsRequired  bool   `json:"isRequired,omitempty"`
	Format      string `json:"format,omitempty"`
	Value       string `json:"value,omitempty"`
	IsSecret    bool   `json:"isSecret,omitempty"`
	Default     string `json:"default,omitempty"`
	Placeholder string `json:"placeholder,omitempty"`
}

// Argument is a positional or named command-line argument.
type Argument struct {
	Type        string `json:"type"`
	Name        string `json:"name,omitempty"`
	Value       string `json:"value,omitempty"`
	ValueHint   string `json:"valueHint,omitempty"`
	Description string `json:"description,omitempty"`
	IsRequired  bool   `json:"isRequired,omitempty"`
	IsRepeated  bool   `json:"isRepeated,omitempty"`
	IsSecret    bool   `json:"isSecret,omitempty"`
	Default     string `json:"default,omitempty"`
}

// FieldError is a server.json field, a name, a version or a cursor that
// is not acceptable: Field locates it (JSON path or parameter name).
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// ValidName checks a server name: reverse-DNS namespace, one slash, a
// name ("io.github.user/weather").
func ValidName(name string) error {
	switch {
	case len(name) < MinNameLen || len(name) > MaxNameLen:
		return fieldErr("name", "%q is %d bytes; a server name has %d to %d", clip(name), len(name), MinNameLen, MaxNameLen)
	case !nameRe.MatchString(name):
		return fieldErr("name", "%q is not a server name: write it as a reverse-DNS namespace, one slash and a name of letters, digits, '.', '_' or '-' (io.github.user/weather)", clip(name))
	}
	ns, _, _ := strings.Cut(name, "/")
	if strings.HasPrefix(ns, ".") || strings.HasSuffix(ns, ".") || strings.Contains(ns, "..") {
		return fieldErr("name", "%q: the namespace %q has an empty label", clip(name), ns)
	}
	return nil
}

// ValidVersion checks a server version: one exact version (not a range,
// not "latest"), printable, without '/' or spaces.
func ValidVersion(v string) error {
	switch {
	case v == "":
		return fieldErr("version", "a version is required (1.0.2)")
	case len(v) > MaxVersionLen:
		return fieldErr("version", "%d bytes; the limit is %d", len(v), MaxVersionLen)
	case v == "latest":
		return fieldErr("version", `"latest" names no version; give an exact one (1.0.2)`)
	case !utf8.ValidString(v):
		return fieldErr("version", "%q is not UTF-8", clip(v))
	}
	for _, r := range v {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) || r == '/' || r == '\\' {
			return fieldErr("version", "%q has a space, a control character or a slash; give an exact version (1.0.2)", clip(v))
		}
	}
	if strings.ContainsAny(v, "^~<>=*|,") || v == "x" || strings.HasSuffix(v, ".x") || strings.Contains(v, ".x.") {
		return fieldErr("version", "%q is a version range; give an exact version (1.0.2)", clip(v))
	}
	return nil
}

// clip shortens a hostile value for an error message.
func clip(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

func checkText(field, s string, max int, required bool) error {
	switch {
	case s == "" && required:
		return fieldErr(field, "is required")
	case len([]rune(s)) > max:
		return fieldErr(field, "%d characters; the limit is %d", len([]rune(s)), max)
	case !utf8.ValidString(s):
		return fieldErr(field, "is not UTF-8")
	}
	return nil
}

func checkURI(field, s string, https bool) error {
	if len(s) > MaxURLLen {
		return fieldErr(field, "%d bytes; the limit is %d", len(s), MaxURLLen)
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return fieldErr(field, "%q is not an absolute URL", clip(s))
	}
	if u.Scheme != "https" && (https || u.Scheme != "http") {
		return fieldErr(field, "%q: the scheme must be https", clip(s))
	}
	if u.User != nil {
		return fieldErr(field, "%q has credentials in it; a registry serves no secret", clip(s))
	}
	return nil
}

// Validate checks a server.json document from outside, as the registry's
// schema does, and a little more: every URL is absolute, without
// credentials. Errors are *FieldError naming the JSON path.
func (s *Server) Validate() error {
	if s.Schema != "" {
		if err := checkURI("$schema", s.Schema, false); err != nil {
			return err
		}
	}
	if err := ValidName(s.Name); err != nil {
		return err
	}
	if err := ValidVersion(s.Version); err != nil {
		return err
	}
	if err := checkText("description", s.Description, MaxDescriptionLen, true); err != nil {
		return err
	}
	if s.Title != "" {
		if err := checkText("title", s.Title, MaxTitleLen, false); err != nil {
			return err
		}
	}
	if s.WebsiteURL != "" {
		if err := checkURI("websiteUrl", s.WebsiteURL, false); err != nil {
			return err
		}
	}
	if r := s.Repository; r != nil {
		if err := checkURI("repository.url", r.URL, false); err != nil {
			return err
		}
		if err := checkText("repository.source", r.Source, 64, true); err != nil {
			return err
		}
		if strings.Contains(r.Subfolder, "..") || strings.HasPrefix(r.Subfolder, "/") {
			return fieldErr("repository.subfolder", "%q is not a clean relative path", clip(r.Subfolder))
		}
	}
	if len(s.Packages) > MaxItems || len(s.Remotes) > MaxItems {
		return fieldErr("packages", "more than %d packages or remotes", MaxItems)
	}
	for i, p := range s.Packages {
		f := fmt.Sprintf("packages[%d]", i)
		if err := checkText(f+".registryType", p.RegistryType, 32, true); err != nil {
			return err
		}
		if err := checkText(f+".identifier", p.Identifier, 512, true); err != nil {
			return err
		}
		if p.Version != "" {
			if err := ValidVersion(p.Version); err != nil {
				return fieldErr(f+".version", "%s", err.(*FieldError).Msg)
			}
		}
		if p.RegistryBaseURL != "" {
			if err := checkURI(f+".registryBaseUrl", p.RegistryBaseURL, false); err != nil {
				return err
			}
		}
		if p.FileSHA256 != "" && !sha256Re.MatchString(p.FileSHA256) {
			return fieldErr(f+".fileSha256", "is not 64 lower-case hex digits")
		}
		if err := p.Transport.validate(f+".transport", false); err != nil {
			return err
		}
		if len(p.RuntimeArguments) > MaxItems || len(p.PackageArguments) > MaxItems || len(p.EnvironmentVariables) > MaxItems {
			return fieldErr(f, "more than %d arguments or environment variables", MaxItems)
		}
		for j, a := range append(append([]Argument{}, p.RuntimeArguments...), p.PackageArguments...) {
			if err := a.validate(fmt.Sprintf("%s.arguments[%d]", f, j)); err != nil {
				return err
			}
		}
		for j, in := range p.EnvironmentVariables {
			if in.Name == "" {
				return fieldErr(fmt.Sprintf("%s.environmentVariables[%d].name", f, j), "is required")
			}
			if err := in.validate(fmt.Sprintf("%s.environmentVariables[%d]", f, j)); err != nil {
				return err
			}
		}
	}
	for i, r := range s.Remotes {
		if err := r.validate(fmt.Sprintf("remotes[%d]", i), true); err != nil {
			return err
		}
	}
	return nil
}

var inputFormats = map[string]bool{"": true, "string": true, "number": true, "boolean": true, "filepath": true}

func (in Input) validate(f string) error {
	if !inputFormats[in.Format] {
		return fieldErr(f+".format", "%q is not one of string, number, boolean, filepath", clip(in.Format))
	}
	for k, v := range map[string]string{"name": in.Name, "description": in.Description, "value": in.Value, "default": in.Default, "placeholder": in.Placeholder} {
		if err := checkText(f+"."+k, v, 1024, false); err != nil {
			return err
		}
	}
	return nil
}

func (a Argument) validate(f string) error {
	switch a.Type {
	case "positional":
		if a.ValueHint == "" && a.Value == "" {
			return fieldErr(f, "a positional argument needs a valueHint or a value")
		}
	case "named":
		if a.Name == "" {
			return fieldErr(f+".name", "a named argument needs its flag (--port)")
		}
	default:
		return fieldErr(f+".type", "%q is not positional or named", clip(a.Type))
	}
	for k, v := range map[string]string{"name": a.Name, "value": a.Value, "valueHint": a.ValueHint, "description": a.Description, "default": a.Default} {
		if err := checkText(f+"."+k, v, 1024, false); err != nil {
			return err
		}
	}
	return nil
}

func (t Transport) validate(f string, remote bool) error {
	switch t.Type {
	case "stdio":
		if remote {
			return fieldErr(f+".type", "a remote is streamable-http or sse, not stdio")
		}
		if t.URL != "" || len(t.Headers) > 0 || len(t.Variables) > 0 {
			return fieldErr(f, "a stdio transport has no url, headers or variables")
		}
		return nil
	case "streamable-http", "sse":
	default:
		return fieldErr(f+".type", "%q is not stdio, streamable-http or sse", clip(t.Type))
	}
	if len(t.URL) > MaxURLLen || !urlTplRe.MatchString(t.URL) {
		return fieldErr(f+".url", "%q is not an http(s) URL or a URL template starting with {variable}", clip(t.URL))
	}
	if strings.HasPrefix(t.URL, "http") {
		if u, err := url.Parse(t.URL); err != nil || u.User != nil {
			return fieldErr(f+".url", "%q is not a URL without credentials", clip(t.URL))
		}
	}
	if !remote && len(t.Variables) > 0 {
		return fieldErr(f+".variables", "only a remote has variables")
	}
	if len(t.Headers) > MaxItems || len(t.Variables) > MaxItems {
		return fieldErr(f, "more than %d headers or variables", MaxItems)
	}
	for i, h := range t.Headers {
		if h.Name == "" {
			return fieldErr(fmt.Sprintf("%s.headers[%d].name", f, i), "is required")
		}
		if err := h.validate(fmt.Sprintf("%s.headers[%d]", f, i)); err != nil {
			return err
		}
	}
	for k, v := range t.Variables {
		if !varNameRe.MatchString(k) {
			return fieldErr(f+".variables", "%q is not a variable name", clip(k))
		}
		if err := v.validate(f + ".variables." + k); err != nil {
			return err
		}
	}
	return nil
}

// Parse reads a server.json document from outside: unknown fields are
// refused (so a misspelt one is not dropped silently), then Validate.
func Parse(data []byte) (Server, error) {
	var s Server
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Server{}, fieldErr("body", "not a server.json document: %v", err)
	}
	if dec.More() {
		return Server{}, fieldErr("body", "more than one JSON value")
	}
	if err := s.Validate(); err != nil {
		return Server{}, err
	}
	if s.Schema == "" {
		s.Schema = SchemaURL
	}
	return s, nil
}

// Entry is one server version the registry lists: the document and the
// registry's own metadata.
type Entry struct {
	Server    Server
	Published time.Time
	Updated   time.Time
	IsLatest  bool
	// Plugin is set for a server of an approved plugin.
	Plugin *PluginRef
	// By is the admin token that added it (added servers).
	By string
}

// PluginRef says which plugin of which channel a server comes from.
type PluginRef struct {
	Plugin  string `json:"plugin"`  // name@channel
	Origin  string `json:"origin"`  // name@marketplace
	Server  string `json:"server"`  // its name in the plugin's MCP configuration
	Channel string `json:"channel"` // the channel it is served from
	Digest  string `json:"digest"`  // w1: of the plugin's tree in the channel
}
