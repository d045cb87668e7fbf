package plugin

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// SourceKind is where a marketplace entry's plugin comes from.
type SourceKind string

// The source forms of a marketplace entry.
const (
	SourceRelative  SourceKind = "relative"   // "./path" inside the marketplace
	SourceGitHub    SourceKind = "github"     // {repo: owner/repo, ref?, sha?}
	SourceURL       SourceKind = "url"        // a git repository {url, ref?, sha?, path?}
	SourceGitSubdir SourceKind = "git-subdir" // {url (a git URL or owner/repo) or repo, path, ref?, sha?}
	SourceNPM       SourceKind = "npm"        // {package, version?, registry?}
	SourceArchive   SourceKind = "archive"    // zip over HTTPS {url, sha256?}
)

// Source is a marketplace entry's "source". For SourceRelative, Path is the
// "./"-prefixed path relative to the marketplace root, with
// metadata.pluginRoot already applied to a bare name.
type Source struct {
	Kind     SourceKind
	Path     string
	Repo     string
	URL      string
	Ref      string
	SHA      string
	Package  string
	Version  string
	Registry string
	SHA256   string
}

// sourceFields lists, per kind, the object keys besides "source", and which
// are required.
var sourceFields = map[SourceKind]struct{ allowed, required []string }{
	SourceGitHub:    {[]string{"repo", "ref", "sha"}, []string{"repo"}},
	SourceURL:       {[]string{"url", "ref", "sha", "path"}, []string{"url"}},
	SourceGitSubdir: {[]string{"url", "repo", "path", "ref", "sha"}, []string{"path"}},
	SourceNPM:       {[]string{"package", "version", "registry"}, []string{"package"}},
	SourceArchive:   {[]string{"url", "sha256"}, []string{"url"}},
}

// UnmarshalJSON accepts "./path" and the object forms. A bare name (allowed
// only with metadata.pluginRoot) is refused here: use ParseMarketplace.
func (s *Source) UnmarshalJSON(b []byte) error {
	d, n, err := decodeFragment(b)
	if err != nil {
		return err
	}
	*s = d.source(n, "", "")
	return firstErrorOrNil(d.diags)
}

// MarshalJSON writes the string form for a relative source and the object
// form otherwise.
func (s Source) MarshalJSON() ([]byte, error) {
	if s.Kind == SourceRelative {
		return json.Marshal(s.Path)
	}
	type obj struct {
		Source   SourceKind `json:"source"`
		Repo     string     `json:"repo,omitempty"`
		URL      string     `json:"url,omitempty"`
		Path     string     `json:"path,omitempty"`
		Ref      string     `json:"ref,omitempty"`
		SHA      string     `json:"sha,omitempty"`
		Package  string     `json:"package,omitempty"`
		Version  string     `json:"version,omitempty"`
		Registry string     `json:"registry,omitempty"`
		SHA256   string     `json:"sha256,omitempty"`
	}
	return json.Marshal(obj{s.Kind, s.Repo, s.URL, s.Path, s.Ref, s.SHA, s.Package, s.Version, s.Registry, s.SHA256})
}

// Validate checks the fields of s for its kind.
func (s Source) Validate() error {
	for _, p := range s.problems() {
		if !p.warn {
			return fmt.Errorf("source.%s: %s", p.field, p.msg)
		}
	}
	return nil
}

// Revision returns the commit or ref to fetch: sha wins over ref.
func (s Source) Revision() string {
	if s.SHA != "" {
		return s.SHA
	}
	return s.Ref
}

type sourceProblem struct {
	field string
	msg   string
	warn  bool
}

func (s Source) problems() []sourceProblem {
	var out []sourceProblem
	bad := func(field, format string, args ...any) {
		out = append(out, sourceProblem{field: field, msg: fmt.Sprintf(format, args...)})
	}
	if s.Kind == SourceRelative {
		if err := checkRelPath(s.Path, true); err != nil {
			bad("path", "%v", err)
		}
		return out
	}
	spec, ok := sourceFields[s.Kind]
	if !ok {
		bad("source", "unknown source kind %q; expected github, url, git-subdir, npm or archive", s.Kind)
		return out
	}
	for _, f := range spec.required {
		if s.field(f) == "" {
			bad(f, "required for a %q source", s.Kind)
		}
	}
	if s.Kind == SourceGitSubdir && s.URL == "" && s.Repo == "" {
		bad("url", "required (a git URL or owner/repo) for a %q source", s.Kind)
	}
	if s.Repo != "" && !isOwnerRepo(s.Repo) {
		bad("repo", "%q is not owner/repo", s.Repo)
	}
	if s.URL != "" {
		switch s.Kind {
		case SourceArchive:
			if msg, w := checkHTTPURL(s.URL); msg != "" {
				out = append(out, sourceProblem{field: "url", msg: msg, warn: w})
			}
		case SourceGitSubdir:
			if !isOwnerRepo(s.URL) {
				if msg, w := checkGitURL(s.URL); msg != "" {
					out = append(out, sourceProblem{field: "url", msg: msg, warn: w})
				}
			}
		default:
			if msg, w := checkGitURL(s.URL); msg != "" {
				out = append(out, sourceProblem{field: "url", msg: msg, warn: w})
			}
		}
	}
	if s.Path != "" {
		if err := checkRelPath(s.Path, false); err != nil {
			bad("path", "%v", err)
		}
	}
	if s.Ref != "" {
		if msg := checkRef(s.Ref); msg != "" {
			bad("ref", "%s", msg)
		}
	}
	if s.SHA != "" && (len(s.SHA) != 40 && len(s.SHA) != 64 || !allHex(s.SHA)) {
		bad("sha", "%q is not a full commit hash (40 or 64 hex digits)", s.SHA)
	}
	if s.SHA256 != "" && (len(s.SHA256) != 64 || !allHex(s.SHA256)) {
		bad("sha256", "%q is not 64 hex digits", s.SHA256)
	}
	if s.Package != "" && !isNPMName(s.Package) {
		bad("package", "%q is not a valid npm package name", s.Package)
	}
	if s.Version != "" && (strings.ContainsAny(s.Version, " \t\r\n") || strings.HasPrefix(s.Version, "-")) {
		bad("version", "%q is not a valid npm version or tag", s.Version)
	}
	if s.Registry != "" {
		if msg, w := checkHTTPURL(s.Registry); msg != "" {
			out = append(out, sourceProblem{field: "registry", msg: msg, warn: w})
		}
	}
	return out
}

func (s Source) field(name string) string {
	switch name {
	case "repo":
		return s.Repo
	case "url":
		return s.URL
	case "path":
		return s.Path
	case "ref":
		return s.Ref
	case "sha":
		return s.SHA
	case "package":
		return s.Package
	case "version":
		return s.Version
	case "registry":
		return s.Registry
	case "sha256":
		return s.SHA256
	}
	return ""
}

func (s *Source) set(name, v string) {
	switch name {
	case "repo":
		s.Repo = v
	case "url":
		s.URL = v
	case "path":
		s.Path = v
	case "ref":
		s.Ref = v
	case "sha":
		s.SHA = v
	case "package":
		s.Package = v
	case "version":
		s.Version = v
	case "registry":
		s.Registry = v
	case "sha256":
		s.SHA256 = v
	}
}

// source decodes an entry's source. pluginRoot is metadata.pluginRoot.
func (d *decoder) source(n *node, f, pluginRoot string) Source {
	var s Source
	switch n.kind {
	case kindString:
		s = Source{Kind: SourceRelative, Path: n.str}
		if !strings.HasPrefix(n.str, "./") && n.str != "." && !strings.HasPrefix(n.str, "/") && strings.ContainsAny(n.str, ":/") {
			// "github:owner/repo", "owner/repo" or a URL written as a
			// string: Claude Code refuses the entry; so does wharf, rather
			// than look for a folder of that name.
			d.errorf(n, f, "%q is not a source: a string source must start with ./ (a path inside the marketplace; with metadata.pluginRoot a bare folder name also works); for a repository write {\"source\": \"github\", \"repo\": \"owner/repo\"} or {\"source\": \"url\", \"url\": \"...\"}", n.str)
			return s
		}
		if pluginRoot != "" && !strings.HasPrefix(n.str, "./") && n.str != "." && !strings.HasPrefix(n.str, "/") {
			// metadata.pluginRoot prefixes a bare name: "fmt" with
			// pluginRoot "./plugins" is "./plugins/fmt".
			root := strings.TrimSuffix(pluginRoot, "/")
			if !strings.HasPrefix(root, "./") && root != "." {
				root = "./" + root
			}
			s.Path = root + "/" + n.str
		}
		for _, p := range s.problems() {
			d.errorf(n, f, "%s", p.msg)
		}
		return s
	case kindObject:
	default:
		d.typeError(n, f, `"./path" or an object {"source": kind, ...}`)
		return s
	}
	d.object(n, f)
	kindNode := n.get("source")
	if kindNode == nil {
		d.errorf(n, key(f, "source"), "required field is missing (github, url, git-subdir, npm or archive)")
		return s
	}
	if kindNode.kind != kindString {
		d.typeError(kindNode, key(f, "source"), "string (github, url, git-subdir, npm or archive)")
		return s
	}
	s.Kind = SourceKind(kindNode.str)
	spec, ok := sourceFields[s.Kind]
	if !ok {
		d.errorf(kindNode, key(f, "source"), "unknown source kind %q; expected github, url, git-subdir, npm or archive", s.Kind)
		return s
	}
	for _, m := range n.members {
		if m.key == "source" {
			continue
		}
		allowed := false
		for _, a := range spec.allowed {
			allowed = allowed || a == m.key
		}
		if !allowed {
			d.warnf(&node{off: m.keyOff}, key(f, m.key), "unknown key %q for a %q source (ignored)", m.key, s.Kind)
			continue
		}
		s.set(m.key, d.str(m.val, key(f, m.key)))
	}
	for _, p := range s.problems() {
		at := n.get(p.field)
		if at == nil {
			at = n
		}
		if p.warn {
			d.warnf(at, key(f, p.field), "%s", p.msg)
		} else {
			d.errorf(at, key(f, p.field), "%s", p.msg)
		}
	}
	return s
}

func isOwnerRepo(s string) bool {
	owner, repo, ok := strings.Cut(s, "/")
	return ok && ValidateName(owner) == nil && ValidateName(strings.TrimSuffix(repo, ".git")) == nil && repo != ".." && !strings.Contains(repo, "..")
}

// checkGitURL accepts https://, ssh://, git@host:path (warning-free), and
// http:// and file:// with a warning. It returns a message and whether the
// message is only a warning.
func checkGitURL(s string) (string, bool) {
	if strings.HasPrefix(s, "-") {
		return fmt.Sprintf("%q starts with '-'", s), false
	}
	if strings.HasPrefix(s, "git@") {
		if !strings.Contains(s, ":") || strings.ContainsAny(s, " \t\r\n") {
			return fmt.Sprintf("%q is not a git@host:owner/repo address", s), false
		}
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Sprintf("%q is not a URL: %v", s, err), false
	}
	switch u.Scheme {
	case "https", "ssh":
		if u.Host == "" {
			return fmt.Sprintf("%q has no host", s), false
		}
		return "", false
	case "http":
		return fmt.Sprintf("%q is not https; the content is not protected in transit", s), true
	case "file":
		return fmt.Sprintf("%q is a local file URL; it works only on this machine", s), true
	}
	return fmt.Sprintf("%q must be an https://, ssh:// or git@ URL", s), false
}

func checkHTTPURL(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Sprintf("%q is not a URL: %v", s, err), false
	}
	switch u.Scheme {
	case "https":
		if u.Host == "" {
			return fmt.Sprintf("%q has no host", s), false
		}
		return "", false
	case "http":
		return fmt.Sprintf("%q is not https; the content is not protected in transit", s), true
	}
	return fmt.Sprintf("%q must be an https:// URL", s), false
}

// checkRef refuses refs git would read as an option or that are not valid
// ref names.
func checkRef(r string) string {
	switch {
	case strings.HasPrefix(r, "-"):
		return fmt.Sprintf("%q starts with '-'", r)
	case strings.Contains(r, ".."), strings.ContainsAny(r, " ~^:?*[\\\x7f"):
		return fmt.Sprintf("%q is not a valid git ref name", r)
	}
	for i := 0; i < len(r); i++ {
		if r[i] < 0x20 {
			return fmt.Sprintf("%q contains a control character", r)
		}
	}
	return ""
}

func allHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

// isNPMName checks the npm package name rules that matter for safety:
// lowercase, URL-safe, optional @scope/, no "..".
func isNPMName(s string) bool {
	if s == "" || len(s) > 214 || strings.Contains(s, "..") {
		return false
	}
	name := s
	if strings.HasPrefix(s, "@") {
		scope, rest, ok := strings.Cut(s[1:], "/")
		if !ok || scope == "" || rest == "" {
			return false
		}
		if !npmPart(scope) {
			return false
		}
		name = rest
	}
	return npmPart(name) && name[0] != '.' && name[0] != '_'
}

func npmPart(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return s != ""
}
