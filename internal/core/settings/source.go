package settings

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/wharfhq/wharf/internal/core/lazyre"
)

// Source kinds of a marketplace source object.
const (
	KindGitHub    = "github"
	KindGit       = "git"
	KindURL       = "url"
	KindDirectory = "directory"
	KindFile      = "file"
	// Pattern kinds appear only in policy lists (strictKnownMarketplaces,
	// blockedMarketplaces).
	KindHostPattern = "hostPattern"
	KindPathPattern = "pathPattern"
	// KindOwnerWildcard is the "owner/*" string form, policy lists only.
	KindOwnerWildcard = "owner/*"
)

// MarketplaceSource is a marketplace source object as it appears in
// extraKnownMarketplaces and in policy lists.
type MarketplaceSource struct {
	Source      string            `json:"source"`
	Repo        string            `json:"repo,omitempty"`
	URL         string            `json:"url,omitempty"`
	Ref         string            `json:"ref,omitempty"`
	Path        string            `json:"path,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	HostPattern string            `json:"hostPattern,omitempty"`
	PathPattern string            `json:"pathPattern,omitempty"`
	// Owner is set for the "owner/*" wildcard (Source == KindOwnerWildcard).
	Owner string `json:"-"`
}

// allowed fields per kind; "source" is implied.
var sourceFields = map[string][]string{
	KindGitHub:      {"repo", "ref", "path"},
	KindGit:         {"url", "ref", "path"},
	KindURL:         {"url", "headers"},
	KindDirectory:   {"path"},
	KindFile:        {"path"},
	KindHostPattern: {"hostPattern"},
	KindPathPattern: {"pathPattern"},
}

var repoRE = lazyre.New(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
var ownerRE = lazyre.New(`^[A-Za-z0-9_.-]+$`)

// MarshalJSON writes the owner wildcard back as its string form.
func (s MarketplaceSource) MarshalJSON() ([]byte, error) {
	if s.Source == KindOwnerWildcard {
		return json.Marshal(s.Owner + "/*")
	}
	type plain MarketplaceSource
	return json.Marshal(plain(s))
}

// IsPattern reports whether s is one of the policy-only pattern forms.
func (s MarketplaceSource) IsPattern() bool {
	switch s.Source {
	case KindHostPattern, KindPathPattern, KindOwnerWildcard:
		return true
	}
	return false
}

// Key is the canonical identity used for exact matching: the kind and the
// identifying fields (repo, url, ref, path). Headers are credentials, not
// identity, and do not take part. GitHub repositories compare
// case-insensitively, as GitHub does.
func (s MarketplaceSource) Key() string {
	var id string
	switch s.Source {
	case KindGitHub:
		id = strings.ToLower(s.Repo)
	case KindGit, KindURL:
		id = s.URL
	case KindDirectory, KindFile:
		id = cleanPath(s.Path)
	case KindHostPattern:
		id = s.HostPattern
	case KindPathPattern:
		id = s.PathPattern
	case KindOwnerWildcard:
		id = strings.ToLower(s.Owner)
	}
	path := s.Path
	if s.Source == KindDirectory || s.Source == KindFile {
		path = ""
	}
	// Quoted fields joined with spaces: unambiguous, and cheap enough to
	// compute per request.
	return strconv.Quote(s.Source) + " " + strconv.Quote(id) + " " + strconv.Quote(s.Ref) + " " + strconv.Quote(path)
}

// RepoOwner is the owner a "owner/*" wildcard matches against: the owner of a
// github source or of a git URL on github.com; "" otherwise. Lower case.
func (s MarketplaceSource) RepoOwner() string {
	switch s.Source {
	case KindGitHub:
		o, _, _ := strings.Cut(s.Repo, "/")
		return strings.ToLower(o)
	case KindGit, KindURL:
		host, p := splitURL(s.URL)
		if strings.EqualFold(host, "github.com") {
			o, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
			return strings.ToLower(o)
		}
	}
	return ""
}

// Host is what a hostPattern matches: github.com for github sources, the URL
// host of git and url sources, "" for local sources.
func (s MarketplaceSource) Host() string {
	switch s.Source {
	case KindGitHub:
		return "github.com"
	case KindGit, KindURL:
		h, _ := splitURL(s.URL)
		return h
	}
	return ""
}

// LocalPath is what a pathPattern matches: the cleaned path of a directory or
// file source, "" otherwise.
func (s MarketplaceSource) LocalPath() string {
	if s.Source == KindDirectory || s.Source == KindFile {
		return cleanPath(s.Path)
	}
	return ""
}

func cleanPath(p string) string {
	if p == "" {
		return ""
	}
	return filepath.ToSlash(filepath.Clean(p))
}

// splitURL returns host and path of https://, ssh:// and scp-like
// (git@host:owner/repo) URLs.
func splitURL(raw string) (host, path string) {
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

// decodeSource decodes one source object. policy admits the pattern forms.
func decodeSource(raw json.RawMessage, policy bool) (MarketplaceSource, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return MarketplaceSource{}, err
		}
		if !policy {
			return MarketplaceSource{}, fmt.Errorf("a marketplace source must be an object like {\"source\":\"github\",\"repo\":\"owner/repo\"}, not the string %q", s)
		}
		owner, ok := strings.CutSuffix(s, "/*")
		if !ok || !ownerRE.MatchString(owner) {
			return MarketplaceSource{}, fmt.Errorf("string entry %q: the only string form is the repository wildcard \"owner/*\"", s)
		}
		return MarketplaceSource{Source: KindOwnerWildcard, Owner: owner}, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return MarketplaceSource{}, fmt.Errorf("want a source object, got %s", jsonKind(raw))
	}
	var kind string
	if err := json.Unmarshal(fields["source"], &kind); err != nil || kind == "" {
		return MarketplaceSource{}, fmt.Errorf("missing or non-string \"source\" (one of github, git, url, directory, file)")
	}
	allowed, ok := sourceFields[kind]
	if !ok || (!policy && (kind == KindHostPattern || kind == KindPathPattern)) {
		kinds := "github, git, url, directory, file"
		if policy {
			kinds += ", hostPattern, pathPattern"
		}
		return MarketplaceSource{}, fmt.Errorf("unknown source kind %q (want one of %s)", kind, kinds)
	}
	var unknown []string
	for k := range fields {
		if k != "source" && !contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return MarketplaceSource{}, fmt.Errorf("%s source has unknown field(s) %s (allowed: %s)", kind, strings.Join(unknown, ", "), strings.Join(allowed, ", "))
	}
	s := MarketplaceSource{Source: kind}
	str := func(name string, dst *string, required bool) error {
		v, ok := fields[name]
		if !ok {
			if required {
				return fmt.Errorf("%s source needs %q", kind, name)
			}
			return nil
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return fmt.Errorf("%q must be a string, got %s", name, jsonKind(v))
		}
		if required && *dst == "" {
			return fmt.Errorf("%s source needs a non-empty %q", kind, name)
		}
		return nil
	}
	var err error
	switch kind {
	case KindGitHub:
		if err = str("repo", &s.Repo, true); err == nil && !repoRE.MatchString(s.Repo) {
			err = fmt.Errorf("repo %q must be owner/repo", s.Repo)
		}
	case KindGit, KindURL:
		if err = str("url", &s.URL, true); err == nil {
			if h, _ := splitURL(s.URL); h == "" {
				err = fmt.Errorf("url %q has no host", s.URL)
			}
		}
	case KindDirectory, KindFile:
		err = str("path", &s.Path, true)
	case KindHostPattern:
		if err = str("hostPattern", &s.HostPattern, true); err == nil {
			if _, rerr := regexp.Compile(s.HostPattern); rerr != nil {
				err = fmt.Errorf("hostPattern is not a valid regular expression: %v", rerr)
			}
		}
	case KindPathPattern:
		if err = str("pathPattern", &s.PathPattern, true); err == nil {
			if _, rerr := regexp.Compile(s.PathPattern); rerr != nil {
				err = fmt.Errorf("pathPattern is not a valid regular expression: %v", rerr)
			}
		}
	}
	if err != nil {
		return MarketplaceSource{}, err
	}
	if kind == KindGitHub || kind == KindGit {
		if err := str("ref", &s.Ref, false); err != nil {
			return MarketplaceSource{}, err
		}
		if err := str("path", &s.Path, false); err != nil {
			return MarketplaceSource{}, err
		}
	}
	if h, ok := fields["headers"]; ok {
		if err := json.Unmarshal(h, &s.Headers); err != nil {
			return MarketplaceSource{}, fmt.Errorf("\"headers\" must be an object of strings, got %s", jsonKind(h))
		}
	}
	return s, nil
}

// ParseSource decodes a marketplace source object (not the policy-only forms).
func ParseSource(data []byte) (MarketplaceSource, error) {
	return decodeSource(data, false)
}

// ParsePolicySource decodes a policy list entry, admitting the pattern forms.
func ParsePolicySource(data []byte) (MarketplaceSource, error) {
	return decodeSource(data, true)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func jsonKind(raw json.RawMessage) string {
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

// RepoOwnerWildcard is the lower-case owner of an "owner/*" entry, "" for any
// other kind.
func (s MarketplaceSource) RepoOwnerWildcard() string {
	if s.Source == KindOwnerWildcard {
		return strings.ToLower(s.Owner)
	}
	return ""
}
