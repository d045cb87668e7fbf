package marketplace

import (
	"bytes"
	"encoding/json"
	"fmt"

	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/core/lazyre"
	"github.com/wharfhq/wharf/plugin"
)

// Kind is the "source" discriminator of a marketplace source object, as in
// Claude Code's settings (extraKnownMarketplaces) and known_marketplaces.json.
type Kind string

// The marketplace source kinds.
const (
	KindGitHub    Kind = "github"    // {"source":"github","repo":"owner/repo","ref?","path?"}
	KindGit       Kind = "git"       // {"source":"git","url","ref?","path?"}
	KindURL       Kind = "url"       // {"source":"url","url","headers?"}: a marketplace.json over HTTPS
	KindDirectory Kind = "directory" // {"source":"directory","path"}: a local marketplace root
	KindFile      Kind = "file"      // {"source":"file","path"}: a local marketplace.json
)

// Source says where a marketplace comes from. Its JSON form is the settings
// format; String gives back the form a user types on the command line.
type Source struct {
	Kind    Kind              `json:"source"`
	Repo    string            `json:"repo,omitempty"`
	URL     string            `json:"url,omitempty"`
	Ref     string            `json:"ref,omitempty"`
	Path    string            `json:"path,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// ManifestPath is where a marketplace keeps its catalog, relative to its root.
const ManifestPath = ".claude-plugin/marketplace.json"

// maxSourceLen bounds a source string; anything longer is not a real source.
const maxSourceLen = 4096

var (
	githubRepoRe = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$`)
	scpLikeRe    = lazyre.New(`^([A-Za-z0-9_.-]+@)?([A-Za-z0-9][A-Za-z0-9.-]*):([^/\\].*|/.+)$`)
	shaRe        = lazyre.New(`^[0-9a-f]{40}$`)
)

// ParseSource parses a marketplace source as typed on the command line:
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
// Local paths are returned as given; the caller makes them absolute
// (see Source.Abs). ParseSource touches neither disk nor network.
func ParseSource(s string) (Source, error) {
	raw := s
	s = strings.TrimSpace(s)
	if s == "" {
		return Source{}, sourceErr(raw, "empty marketplace source")
	}
	if len(s) > maxSourceLen {
		return Source{}, sourceErr(raw[:40]+"...", "marketplace source is longer than %d bytes", maxSourceLen)
	}
	if !utf8.ValidString(s) {
		return Source{}, sourceErr(strings.ToValidUTF8(raw, "?"), "marketplace source is not valid UTF-8")
	}
	if strings.ContainsAny(s, "\x00\n\r\t") {
		return Source{}, sourceErr(raw, "marketplace source contains a control character")
	}
	switch {
	case isLocalPath(s):
		if strings.HasSuffix(strings.ToLower(s), ".json") {
			return Source{Kind: KindFile, Path: s}, nil
		}
		return Source{Kind: KindDirectory, Path: s}, nil
	case strings.Contains(s, "://"):
		return parseURLSource(raw, s)
	case isSCPLike(s):
		u, ref, _ := strings.Cut(s, "#")
		src := Source{Kind: KindGit, URL: u, Ref: ref}
		return src, src.Validate()
	}
	repo, ref, hasRef := strings.Cut(s, "@")
	if hasRef && ref == "" {
		return Source{}, sourceErr(raw, "empty ref after @")
	}
	if githubRepoRe.MatchString(repo) {
		src := Source{Kind: KindGitHub, Repo: repo, Ref: ref}
		return src, src.Validate()
	}
	return Source{}, sourceErr(raw, "%q is not a marketplace source", s)
}

// isSCPLike reports the git@host:path form: user@host before the first colon.
func isSCPLike(s string) bool {
	head, _, ok := strings.Cut(s, ":")
	return ok && strings.Contains(head, "@") && !strings.Contains(head, "/") && scpLikeRe.MatchString(s)
}

func isLocalPath(s string) bool {
	return s == "." || s == ".." || s == "~" ||
		strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") ||
		strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~/")
}

func parseURLSource(raw, s string) (Source, error) {
	u, err := url.Parse(s)
	if err != nil {
		return Source{}, sourceErr(raw, "invalid URL: %v", err)
	}
	ref := u.Fragment
	u.Fragment = ""
	u.RawFragment = ""
	clean := u.String()
	switch u.Scheme {
	case "https", "http":
		if strings.HasSuffix(strings.ToLower(u.Path), ".json") {
			if ref != "" {
				return Source{}, sourceErr(raw, "a marketplace.json URL takes no #ref")
			}
			src := Source{Kind: KindURL, URL: clean}
			return src, src.Validate()
		}
		src := Source{Kind: KindGit, URL: clean, Ref: ref}
		return src, src.Validate()
	case "ssh", "file", "git":
		src := Source{Kind: KindGit, URL: clean, Ref: ref}
		return src, src.Validate()
	}
	return Source{}, sourceErr(raw, "unsupported URL scheme %q; use https://, ssh://, git@host:path or file://", u.Scheme)
}

// Validate checks that the fields required by Kind are present and safe.
func (s Source) Validate() error {
	obj := s.String()
	if s.Ref != "" {
		if err := validateRef(s.Ref); err != nil {
			return sourceErr(obj, "ref: %v", err)
		}
	}
	if s.Path != "" && strings.ContainsRune(s.Path, 0) {
		return sourceErr(obj, "path contains NUL")
	}
	switch s.Kind {
	case KindGitHub:
		if !githubRepoRe.MatchString(s.Repo) || strings.Contains(s.Repo, "..") {
			return sourceErr(obj, "repo %q must be owner/repo", s.Repo)
		}
		return validateSubpath(obj, s.Path)
	case KindGit:
		if s.URL == "" {
			return sourceErr(obj, "git source needs a url")
		}
		if err := validateGitURL(s.URL); err != nil {
			return sourceErr(obj, "%v", err)
		}
		return validateSubpath(obj, s.Path)
	case KindURL:
		u, err := url.Parse(s.URL)
		if err != nil || u.Host == "" {
			return sourceErr(obj, "url source needs an absolute https:// URL")
		}
		if err := checkScheme(u); err != nil {
			return sourceErr(obj, "%v", err)
		}
		if s.Ref != "" || s.Path != "" {
			return sourceErr(obj, "url source takes neither ref nor path")
		}
		for k := range s.Headers {
			if k == "" || strings.ContainsAny(k, ":\r\n ") || strings.ContainsAny(s.Headers[k], "\r\n") {
				return sourceErr(obj, "header %q is not a valid HTTP header", k)
			}
		}
		return nil
	case KindDirectory, KindFile:
		if s.Path == "" {
			return sourceErr(obj, "%s source needs a path", s.Kind)
		}
		if s.Ref != "" || s.URL != "" || s.Repo != "" {
			return sourceErr(obj, "%s source takes only a path", s.Kind)
		}
		return nil
	case "":
		return sourceErr(obj, `marketplace source has no "source" kind; use github, git, url, directory or file`)
	}
	return sourceErr(obj, "unknown marketplace source kind %q; use github, git, url, directory or file", s.Kind)
}

func validateRef(ref string) error {
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

func validateSubpath(obj, p string) error {
	if p == "" {
		return nil
	}
	clean := filepath.ToSlash(filepath.Clean(p))
	if filepath.IsAbs(p) || clean == ".." || strings.HasPrefix(clean, "../") {
		return sourceErr(obj, "path %q must stay inside the repository", p)
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
		if u.Host == "" {
			return fmt.Errorf("git URL %q has no host", s)
		}
		return checkScheme(u)
	case "ssh", "git":
		if u.Host == "" {
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

// checkScheme allows http:// only to loopback, where nothing can intercept it.
func checkScheme(u *url.URL) error {
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if fetch.IsLoopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("plain http:// is refused for %s (only loopback may use it); use https://", u.Host)
	}
	return fmt.Errorf("unsupported scheme %q; use https://", u.Scheme)
}

// String prints the source as a user would type it to `wharf marketplace add`.
func (s Source) String() string {
	switch s.Kind {
	case KindGitHub:
		if s.Ref != "" {
			return s.Repo + "@" + s.Ref
		}
		return s.Repo
	case KindGit:
		if s.Ref != "" {
			return s.URL + "#" + s.Ref
		}
		return s.URL
	case KindURL:
		return s.URL
	case KindDirectory, KindFile:
		return s.Path
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// Equal reports whether two sources name the same thing (headers excluded:
// they are credentials, not identity).
func (s Source) Equal(o Source) bool {
	return s.Kind == o.Kind && s.Repo == o.Repo && s.URL == o.URL && s.Ref == o.Ref && s.Path == o.Path
}

// IsGit reports whether the source is fetched with git.
func (s Source) IsGit() bool { return s.Kind == KindGitHub || s.Kind == KindGit }

// IsLocal reports whether the source is a path on this machine that wharf
// reads in place (it never copies or deletes it).
func (s Source) IsLocal() bool { return s.Kind == KindDirectory || s.Kind == KindFile }

// PinnedSHA returns the ref when it is a full commit SHA.
func (s Source) PinnedSHA() string {
	if shaRe.MatchString(s.Ref) {
		return s.Ref
	}
	return ""
}

// Abs returns s with a local path made absolute against dir (the working
// directory of the command that names it), and "~" expanded against home.
func (s Source) Abs(dir, userHome string) Source {
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

// UnmarshalJSON decodes the settings form and validates it.
func (s *Source) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		// Accept the string form too ("owner/repo"), as users write it by hand.
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		p, err := ParseSource(str)
		if err != nil {
			return err
		}
		*s = p
		return nil
	}
	type plain Source
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("marketplace source must be an object {\"source\": kind, ...}: %w", err)
	}
	src := Source(p)
	if err := src.Validate(); err != nil {
		return err
	}
	*s = src
	return nil
}

// MarshalJSON writes the settings form with keys in a fixed order.
func (s Source) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"source":`)
	writeJSON(&buf, string(s.Kind))
	field := func(k, v string) {
		if v != "" {
			buf.WriteString(`,"` + k + `":`)
			writeJSON(&buf, v)
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
			writeJSON(&buf, k)
			buf.WriteByte(':')
			writeJSON(&buf, s.Headers[k])
		}
		buf.WriteByte('}')
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func writeJSON(buf *bytes.Buffer, v string) {
	b, _ := json.Marshal(v)
	buf.Write(b)
}

func sourceErr(obj, format string, args ...any) error {
	return plugin.Errorf(plugin.LayerIntent, plugin.TypeSource, obj,
		"write it as owner/repo[@ref], a git URL (https://, ssh://, git@host:path, file://) with optional #ref, a directory, a marketplace.json path, or an https:// URL of a marketplace.json",
		format, args...)
}
