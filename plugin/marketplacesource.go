package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// MarketplaceKind is the "source" discriminator of a marketplace source
// object, as in Claude Code's settings (extraKnownMarketplaces),
// known_marketplaces.json and `marketplace add`.
type MarketplaceKind string

// The marketplace source kinds. This is the one list: a new kind is added
// here, in marketplaceFields, and in the fetch of internal/core/marketplace.
const (
	MktGitHub    MarketplaceKind = "github"    // {"source":"github","repo":"owner/repo","ref?","path?"}
	MktGit       MarketplaceKind = "git"       // {"source":"git","url","ref?","path?"}
	MktURL       MarketplaceKind = "url"       // {"source":"url","url","headers?"}: a marketplace.json over HTTPS
	MktDirectory MarketplaceKind = "directory" // {"source":"directory","path"}: a local marketplace root
	MktFile      MarketplaceKind = "file"      // {"source":"file","path"}: a local marketplace.json
)

// marketplaceKinds is every kind, in the order messages list them.
var marketplaceKinds = []MarketplaceKind{MktGitHub, MktGit, MktURL, MktDirectory, MktFile}

// marketplaceFields are the fields each kind's object may carry besides
// "source"; the first is required.
var marketplaceFields = map[MarketplaceKind][]string{
	MktGitHub:    {"repo", "ref", "path"},
	MktGit:       {"url", "ref", "path"},
	MktURL:       {"url", "headers"},
	MktDirectory: {"path"},
	MktFile:      {"path"},
}

// Known reports whether k is one of the marketplace source kinds.
func (k MarketplaceKind) Known() bool {
	_, ok := marketplaceFields[k]
	return ok
}

// MarketplaceKindNames lists the kinds for a message: "github, git, url,
// directory, file".
func MarketplaceKindNames() string {
	names := make([]string, len(marketplaceKinds))
	for i, k := range marketplaceKinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// MarketplaceSource says where a marketplace comes from. Its JSON form is
// the object of Claude Code's settings and known_marketplaces.json
// ({"source": kind, ...}); String gives back the form a user types on the
// command line (see ParseMarketplaceSource); Canonical gives the form
// allow and block decisions compare.
type MarketplaceSource struct {
	Kind    MarketplaceKind   `json:"source"`
	Repo    string            `json:"repo,omitempty"`
	URL     string            `json:"url,omitempty"`
	Ref     string            `json:"ref,omitempty"`
	Path    string            `json:"path,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// maxMarketplaceSourceLen bounds a source string; anything longer is not a
// real source.
const maxMarketplaceSourceLen = 4096

var (
	mktGitHubRepoRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$`) })
	mktSCPLikeRe    = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^([A-Za-z0-9_.-]+@)?([A-Za-z0-9][A-Za-z0-9.-]*):([^/\\].*|/.+)$`)
	})
	mktSHARe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{40}$`) })
	// mktSettingsRepoRe is the repo a settings file may name: looser than
	// what `marketplace add` accepts, since policy compares what is written.
	mktSettingsRepoRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`) })
)

// ParseMarketplaceSource parses a marketplace source as typed on the
// command line:
//
//	owner/repo[@ref]                     GitHub shorthand
//	https://host/path[.git][#ref]        git over HTTPS (http:// only for loopback)
//	ssh://[user@]host/path[#ref]         git over SSH
//	git@host:path[#ref]                  git over SSH, scp-like
//	file:///abs/path[#ref]               git repository on this machine
//	https://host/.../marketplace.json    a marketplace.json served over HTTPS
//	./dir, ../dir, /abs/dir, ~/dir       a local marketplace directory
//	./x/marketplace.json (any *.json)    a local marketplace.json file
//
// Local paths are returned as given; the caller makes them absolute (see
// MarketplaceSource.Abs). It touches neither disk nor network.
func ParseMarketplaceSource(s string) (MarketplaceSource, error) {
	raw := s
	s = strings.TrimSpace(s)
	if s == "" {
		return MarketplaceSource{}, mktSourceErr(raw, "empty marketplace source")
	}
	if len(s) > maxMarketplaceSourceLen {
		return MarketplaceSource{}, mktSourceErr(raw[:40]+"...", "marketplace source is longer than %d bytes", maxMarketplaceSourceLen)
	}
	if !utf8.ValidString(s) {
		return MarketplaceSource{}, mktSourceErr(strings.ToValidUTF8(raw, "?"), "marketplace source is not valid UTF-8")
	}
	if strings.ContainsAny(s, "\x00\n\r\t") {
		return MarketplaceSource{}, mktSourceErr(raw, "marketplace source contains a control character")
	}
	switch {
	case isLocalMarketplacePath(s):
		if strings.HasSuffix(strings.ToLower(s), ".json") {
			return MarketplaceSource{Kind: MktFile, Path: s}, nil
		}
		return MarketplaceSource{Kind: MktDirectory, Path: s}, nil
	case strings.Contains(s, "://"):
		return parseMarketplaceURL(raw, s)
	case isSCPLike(s):
		u, ref, _ := strings.Cut(s, "#")
		src := MarketplaceSource{Kind: MktGit, URL: u, Ref: ref}
		return src, src.Validate()
	}
	repo, ref, hasRef := strings.Cut(s, "@")
	if hasRef && ref == "" {
		return MarketplaceSource{}, mktSourceErr(raw, "empty ref after @")
	}
	if mktGitHubRepoRe().MatchString(repo) {
		src := MarketplaceSource{Kind: MktGitHub, Repo: repo, Ref: ref}
		return src, src.Validate()
	}
	return MarketplaceSource{}, mktSourceErr(raw, "%q is not a marketplace source", s)
}

// isSCPLike reports the git@host:path form: user@host before the first colon.
func isSCPLike(s string) bool {
	head, _, ok := strings.Cut(s, ":")
	return ok && strings.Contains(head, "@") && !strings.Contains(head, "/") && mktSCPLikeRe().MatchString(s)
}

func isLocalMarketplacePath(s string) bool {
	return s == "." || s == ".." || s == "~" ||
		strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") ||
		strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~/")
}

func parseMarketplaceURL(raw, s string) (MarketplaceSource, error) {
	u, err := url.Parse(s)
	if err != nil {
		return MarketplaceSource{}, mktSourceErr(raw, "invalid URL: %v", err)
	}
	ref := u.Fragment
	u.Fragment = ""
	u.RawFragment = ""
	clean := u.String()
	switch u.Scheme {
	case "https", "http":
		if strings.HasSuffix(strings.ToLower(u.Path), ".json") {
			if ref != "" {
				return MarketplaceSource{}, mktSourceErr(raw, "a marketplace.json URL takes no #ref")
			}
			src := MarketplaceSource{Kind: MktURL, URL: clean}
			return src, src.Validate()
		}
		src := MarketplaceSource{Kind: MktGit, URL: clean, Ref: ref}
		return src, src.Validate()
	case "ssh", "file", "git":
		src := MarketplaceSource{Kind: MktGit, URL: clean, Ref: ref}
		return src, src.Validate()
	}
	return MarketplaceSource{}, mktSourceErr(raw, "unsupported URL scheme %q; use https://, ssh://, git@host:path or file://", u.Scheme)
}

// Validate checks that s is a source wharf can fetch: the fields its Kind
// requires are present, it carries no field its kind does not take, and
// each is safe (a git ref, a path inside the repository, https:// or
// loopback http://).
func (s MarketplaceSource) Validate() error {
	obj := s.String()
	if s.Ref != "" {
		if err := validateMarketplaceRef(s.Ref); err != nil {
			return mktSourceErr(obj, "ref: %v", err)
		}
	}
	if s.Path != "" && strings.ContainsRune(s.Path, 0) {
		return mktSourceErr(obj, "path contains NUL")
	}
	if err := s.validateKind(obj); err != nil {
		return err
	}
	fields := marketplaceFields[s.Kind]
	if extra := s.extraFields(fields); len(extra) > 0 {
		return mktSourceErr(obj, "%s source takes no %s (allowed: %s)", s.Kind, strings.Join(extra, ", "), strings.Join(fields, ", "))
	}
	return nil
}

func (s MarketplaceSource) validateKind(obj string) error {
	switch s.Kind {
	case MktGitHub:
		if !mktGitHubRepoRe().MatchString(s.Repo) || strings.Contains(s.Repo, "..") {
			return mktSourceErr(obj, "repo %q must be owner/repo", s.Repo)
		}
		return validateMarketplaceSubpath(obj, s.Path)
	case MktGit:
		if s.URL == "" {
			return mktSourceErr(obj, "git source needs a url")
		}
		if err := validateGitURL(s.URL); err != nil {
			return mktSourceErr(obj, "%v", err)
		}
		return validateMarketplaceSubpath(obj, s.Path)
	case MktURL:
		u, err := url.Parse(s.URL)
		if err != nil || u.Hostname() == "" {
			return mktSourceErr(obj, "url source needs an absolute https:// URL")
		}
		if err := checkMarketplaceScheme(u); err != nil {
			return mktSourceErr(obj, "%v", err)
		}
		if s.Ref != "" || s.Path != "" {
			return mktSourceErr(obj, "url source takes neither ref nor path")
		}
		for k := range s.Headers {
			if k == "" || strings.ContainsAny(k, ":\r\n ") || strings.ContainsAny(s.Headers[k], "\r\n") {
				return mktSourceErr(obj, "header %q is not a valid HTTP header", k)
			}
		}
		return nil
	case MktDirectory, MktFile:
		if s.Path == "" {
			return mktSourceErr(obj, "%s source needs a path", s.Kind)
		}
		if s.Ref != "" || s.URL != "" || s.Repo != "" {
			return mktSourceErr(obj, "%s source takes only a path", s.Kind)
		}
		return nil
	case "":
		return mktSourceErr(obj, `marketplace source has no "source" kind; use %s`, MarketplaceKindNames())
	}
	return mktSourceErr(obj, "unknown marketplace source kind %q; use %s", s.Kind, MarketplaceKindNames())
}

// extraFields names the set fields of s that allowed does not list.
func (s MarketplaceSource) extraFields(allowed []string) []string {
	var extra []string
	for _, f := range []struct {
		name string
		set  bool
	}{{"repo", s.Repo != ""}, {"url", s.URL != ""}, {"ref", s.Ref != ""}, {"path", s.Path != ""}, {"headers", len(s.Headers) > 0}} {
		if f.set && !contains(allowed, f.name) {
			extra = append(extra, f.name)
		}
	}
	return extra
}

func validateMarketplaceRef(ref string) error {
	if len(ref) > 255 {
		return fmt.Errorf("longer than 255 bytes")
	}
	if strings.HasPrefix(ref, "-") || strings.HasPrefix(ref, "/") || strings.HasSuffix(ref, "/") ||
		strings.Contains(ref, "..") || strings.Contains(ref, "//") || strings.HasSuffix(ref, ".lock") {
		return fmt.Errorf("%q is not a valid git ref", ref)
	}
	for _, c := range ref {
		if c < 0x21 || c == 0x7f || strings.ContainsRune("~^:?*[\\@{", c) {
			return fmt.Errorf("%q is not a valid git ref (contains %q)", ref, c)
		}
	}
	return nil
}

func validateMarketplaceSubpath(obj, p string) error {
	if p == "" {
		return nil
	}
	clean := filepath.ToSlash(filepath.Clean(p))
	if filepath.IsAbs(p) || clean == ".." || strings.HasPrefix(clean, "../") {
		return mktSourceErr(obj, "path %q must stay inside the repository", p)
	}
	return nil
}

func validateGitURL(s string) error {
	if isSCPLike(s) {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("invalid git URL: %v", err)
	}
	switch u.Scheme {
	case "https", "http":
		if u.Hostname() == "" {
			return fmt.Errorf("git URL %q has no host", s)
		}
		return checkMarketplaceScheme(u)
	case "ssh", "git":
		if u.Hostname() == "" {
			return fmt.Errorf("git URL %q has no host", s)
		}
		return nil
	case "file":
		if u.Path == "" || u.Host != "" && u.Host != "localhost" {
			return fmt.Errorf("file URL %q must be file:///absolute/path", s)
		}
		return nil
	}
	return fmt.Errorf("unsupported git URL %q; use https://, ssh://, git@host:path or file://", s)
}

// checkMarketplaceScheme allows http:// only to loopback, where nothing
// can intercept it.
func checkMarketplaceScheme(u *url.URL) error {
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if IsLoopbackHost(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("plain http:// is refused for %s (only loopback may use it); use https://", u.Host)
	}
	return fmt.Errorf("unsupported scheme %q; use https://", u.Scheme)
}

// IsLoopbackHost reports whether host (a name or an address, brackets
// allowed) is this machine: localhost, *.localhost, 127/8 or ::1. It is the
// one test of "plain http is acceptable here" in wharf (fetch.IsLoopback
// is this function).
func IsLoopbackHost(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}

// String prints the source as a user would type it to `marketplace add`.
func (s MarketplaceSource) String() string {
	switch s.Kind {
	case MktGitHub:
		if s.Ref != "" {
			return s.Repo + "@" + s.Ref
		}
		return s.Repo
	case MktGit:
		if s.Ref != "" {
			return s.URL + "#" + s.Ref
		}
		return s.URL
	case MktURL:
		return s.URL
	case MktDirectory, MktFile:
		return s.Path
	}
	b, _ := s.MarshalJSON()
	return string(b)
}

// Equal reports whether two sources name the same thing as written
// (headers excluded: they are credentials, not identity). Two spellings of
// one source are equal only in their Canonical form.
func (s MarketplaceSource) Equal(o MarketplaceSource) bool {
	return s.Kind == o.Kind && s.Repo == o.Repo && s.URL == o.URL && s.Ref == o.Ref && s.Path == o.Path
}

// IsGit reports whether the source is fetched with git.
func (s MarketplaceSource) IsGit() bool {
	return s.Kind == MktGitHub || s.Kind == MktGit
}

// IsLocal reports whether the source is a path on this machine that is
// read in place (never copied or deleted).
func (s MarketplaceSource) IsLocal() bool {
	return s.Kind == MktDirectory || s.Kind == MktFile
}

// PinnedSHA returns the ref when it is a full commit SHA.
func (s MarketplaceSource) PinnedSHA() string {
	if mktSHARe().MatchString(s.Ref) {
		return s.Ref
	}
	return ""
}

// Abs returns s with a local path made absolute against dir (the working
// directory of the command that names it), and "~" expanded against
// userHome.
func (s MarketplaceSource) Abs(dir, userHome string) MarketplaceSource {
	if !s.IsLocal() {
		return s
	}
	p := s.Path
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = filepath.Join(userHome, strings.TrimPrefix(p, "~"))
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	s.Path = filepath.Clean(p)
	return s
}

// Host is the host the source is fetched from, as written (lower case):
// github.com for a github source, the URL's host for git and url sources,
// "" for local ones. It is what a hostPattern policy entry matches.
func (s MarketplaceSource) Host() string {
	switch s.Kind {
	case MktGitHub:
		return DefaultGitHubHost
	case MktGit, MktURL:
		h, _ := splitSourceURL(s.URL)
		return h
	}
	return ""
}

// RepoOwner is the lower-case owner of a github source or of a git or url
// source on github.com, as written; "" otherwise. It is what an "owner/*"
// policy entry matches.
func (s MarketplaceSource) RepoOwner() string {
	switch s.Kind {
	case MktGitHub:
		o, _, _ := strings.Cut(s.Repo, "/")
		return strings.ToLower(o)
	case MktGit, MktURL:
		host, p := splitSourceURL(s.URL)
		if strings.EqualFold(host, DefaultGitHubHost) {
			o, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
			return strings.ToLower(o)
		}
	}
	return ""
}

// LocalPath is the cleaned, slash-separated path of a directory or file
// source as written, "" for other kinds. It is what a pathPattern policy
// entry matches.
func (s MarketplaceSource) LocalPath() string {
	if !s.IsLocal() || s.Path == "" {
		return ""
	}
	return filepath.ToSlash(filepath.Clean(s.Path))
}

// splitSourceURL returns host and path of https://, ssh:// and scp-like
// (git@host:owner/repo) URLs.
func splitSourceURL(raw string) (host, path string) {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return strings.ToLower(u.Hostname()), u.Path
	}
	// scp-like: [user@]host:path
	at := strings.LastIndex(raw, "@")
	rest := raw[at+1:]
	if h, p, ok := strings.Cut(rest, ":"); ok && !strings.Contains(h, "/") {
		return strings.ToLower(h), "/" + p
	}
	return "", ""
}

// DecodeMarketplaceSource reads a marketplace source object as a settings
// file writes it: {"source": kind, ...} with only the fields that kind
// takes, each a string (headers an object of strings), and the required
// one non-empty. It checks the form, not whether wharf can fetch the
// source (see Validate): policy compares whatever a settings file names.
// The error names the field.
func DecodeMarketplaceSource(raw []byte) (MarketplaceSource, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return MarketplaceSource{}, err
		}
		return MarketplaceSource{}, fmt.Errorf("a marketplace source must be an object like {\"source\":\"github\",\"repo\":\"owner/repo\"}, not the string %q", s)
	}
	kind, fields, err := ReadSourceObject(raw)
	if err != nil {
		return MarketplaceSource{}, err
	}
	allowed, ok := marketplaceFields[MarketplaceKind(kind)]
	if !ok {
		return MarketplaceSource{}, fmt.Errorf("unknown source kind %q (want one of %s)", kind, MarketplaceKindNames())
	}
	if err := CheckSourceObjectFields(kind, fields, allowed); err != nil {
		return MarketplaceSource{}, err
	}
	s := MarketplaceSource{Kind: MarketplaceKind(kind)}
	required := allowed[0]
	for _, name := range allowed {
		v, ok := fields[name]
		switch {
		case !ok && name == required:
			return MarketplaceSource{}, fmt.Errorf("%s source needs %q", kind, name)
		case !ok:
			continue
		case name == "headers":
			if err := json.Unmarshal(v, &s.Headers); err != nil {
				return MarketplaceSource{}, fmt.Errorf("\"headers\" must be an object of strings, got %s", JSONKind(v))
			}
			continue
		}
		var str string
		if err := json.Unmarshal(v, &str); err != nil {
			return MarketplaceSource{}, fmt.Errorf("%q must be a string, got %s", name, JSONKind(v))
		}
		if name == required && str == "" {
			return MarketplaceSource{}, fmt.Errorf("%s source needs a non-empty %q", kind, name)
		}
		switch name {
		case "repo":
			s.Repo = str
		case "url":
			s.URL = str
		case "ref":
			s.Ref = str
		case "path":
			s.Path = str
		}
	}
	switch s.Kind {
	case MktGitHub:
		if !mktSettingsRepoRe().MatchString(s.Repo) {
			return MarketplaceSource{}, fmt.Errorf("repo %q must be owner/repo", s.Repo)
		}
	case MktGit, MktURL:
		if h, _ := splitSourceURL(s.URL); h == "" {
			return MarketplaceSource{}, fmt.Errorf("url %q has no host", s.URL)
		}
	}
	return s, nil
}

// ReadSourceObject splits a source object into its "source" discriminator
// and its fields. The error says what the JSON is instead of an object, or
// that the discriminator is missing.
func ReadSourceObject(raw []byte) (kind string, fields map[string]json.RawMessage, err error) {
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return "", nil, fmt.Errorf("want a source object, got %s", JSONKind(raw))
	}
	if err := json.Unmarshal(fields["source"], &kind); err != nil || kind == "" {
		return "", nil, fmt.Errorf("missing or non-string \"source\" (one of %s)", MarketplaceKindNames())
	}
	return kind, fields, nil
}

// CheckSourceObjectFields refuses a field of a kind's source object that
// allowed does not list ("source" is implied), naming every such field.
func CheckSourceObjectFields(kind string, fields map[string]json.RawMessage, allowed []string) error {
	var unknown []string
	for k := range fields {
		if k != "source" && !contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return fmt.Errorf("%s source has unknown field(s) %s (allowed: %s)", kind, strings.Join(unknown, ", "), strings.Join(allowed, ", "))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// JSONKind names the kind of a JSON value for a message: "an object", "a
// string", "null", ...
func JSONKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// UnmarshalJSON reads the settings form (see DecodeMarketplaceSource) and
// validates it (see Validate). The string form a user types ("owner/repo",
// a git URL, a path) is accepted too, as users write it by hand.
func (s *MarketplaceSource) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		p, err := ParseMarketplaceSource(str)
		if err != nil {
			return err
		}
		*s = p
		return nil
	}
	src, err := DecodeMarketplaceSource(b)
	if err != nil {
		return fmt.Errorf("marketplace source: %w", err)
	}
	if err := src.Validate(); err != nil {
		return err
	}
	*s = src
	return nil
}

// MarshalJSON writes the settings form with keys in a fixed order.
func (s MarketplaceSource) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"source":`)
	writeJSONString(&buf, string(s.Kind))
	field := func(k, v string) {
		if v != "" {
			buf.WriteString(`,"` + k + `":`)
			writeJSONString(&buf, v)
		}
	}
	field("repo", s.Repo)
	field("url", s.URL)
	field("ref", s.Ref)
	field("path", s.Path)
	if len(s.Headers) > 0 {
		keys := make([]string, 0, len(s.Headers))
		for k := range s.Headers {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf.WriteString(`,"headers":{`)
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJSONString(&buf, k)
			buf.WriteByte(':')
			writeJSONString(&buf, s.Headers[k])
		}
		buf.WriteByte('}')
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func writeJSONString(buf *bytes.Buffer, v string) {
	b, _ := json.Marshal(v)
	buf.Write(b)
}

func mktSourceErr(obj, format string, args ...any) error {
	return Errorf(LayerIntent, TypeSource, obj,
		"write it as owner/repo[@ref], a git URL (https://, ssh://, git@host:path, file://) with optional #ref, a directory, a marketplace.json path, or an https:// URL of a marketplace.json",
		format, args...)
}
