package settings

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/wharfhq/wharf/internal/core/lazyre"
	"github.com/wharfhq/wharf/plugin"
)

// PatternKind is a policy-only entry of strictKnownMarketplaces and
// blockedMarketplaces: a pattern over sources rather than one source.
type PatternKind string

// The pattern kinds. The source kinds are plugin's (plugin.MktGitHub, ...).
const (
	PatternHost PatternKind = "hostPattern" // {"source":"hostPattern","hostPattern": regexp over the host}
	PatternPath PatternKind = "pathPattern" // {"source":"pathPattern","pathPattern": regexp over a local path}
	// PatternOwner is the "owner/*" string form: every repository of a
	// GitHub owner.
	PatternOwner PatternKind = "owner/*"
)

// patternFields is the one field each object pattern carries besides
// "source".
var patternFields = map[PatternKind]string{PatternHost: "hostPattern", PatternPath: "pathPattern"}

// PolicySource is one entry of a policy list (strictKnownMarketplaces,
// blockedMarketplaces): a marketplace source, or (Pattern set) a pattern.
type PolicySource struct {
	// MarketplaceSource is the source the entry names; zero for a pattern.
	plugin.MarketplaceSource
	Pattern     PatternKind // "" for a source
	HostPattern string      // PatternHost: a regular expression over the host
	PathPattern string      // PatternPath: a regular expression over the path
	Owner       string      // PatternOwner: the owner, as written
}

var ownerRE = lazyre.New(`^[A-Za-z0-9_.-]+$`)

// MarshalJSON writes the entry as a settings file does: the source's
// object, a pattern's object, or the owner wildcard's string.
func (s PolicySource) MarshalJSON() ([]byte, error) {
	switch s.Pattern {
	case "":
		return s.MarketplaceSource.MarshalJSON()
	case PatternOwner:
		return json.Marshal(s.Owner + "/*")
	}
	v := s.HostPattern
	if s.Pattern == PatternPath {
		v = s.PathPattern
	}
	k, _ := json.Marshal(string(s.Pattern))
	b, _ := json.Marshal(v)
	return []byte(`{"source":` + string(k) + `,"` + patternFields[s.Pattern] + `":` + string(b) + `}`), nil
}

// IsPattern reports whether s is one of the policy-only pattern forms.
func (s PolicySource) IsPattern() bool { return s.Pattern != "" }

// Key is the identity used for exact matching of entries as written (see
// SourceKey); a pattern is its kind and expression.
func (s PolicySource) Key() string {
	switch s.Pattern {
	case PatternHost:
		return keyOf(string(s.Pattern), s.HostPattern, "", "")
	case PatternPath:
		return keyOf(string(s.Pattern), s.PathPattern, "", "")
	case PatternOwner:
		return keyOf(string(s.Pattern), strings.ToLower(s.Owner), "", "")
	}
	return SourceKey(s.MarketplaceSource)
}

// SourceKey is a source's identity as written, for exact matching: the kind and the
// identifying fields (repo, url, ref, path). Headers are credentials, not
// identity, and do not take part. GitHub repositories compare
// case-insensitively, as GitHub does.
func SourceKey(s plugin.MarketplaceSource) string {
	return string(AppendSourceKey(nil, s))
}

// AppendSourceKey appends SourceKey(s) to dst: a caller that builds a
// larger key (the policy memo's, once per decision) allocates no string
// for it.
func AppendSourceKey(dst []byte, s plugin.MarketplaceSource) []byte {
	var id string
	switch s.Kind {
	case plugin.MktGitHub:
		id = strings.ToLower(s.Repo)
	case plugin.MktGit, plugin.MktURL:
		id = s.URL
	case plugin.MktDirectory, plugin.MktFile:
		id = s.LocalPath()
	default:
		// Any other kind: all its identifying fields, in its JSON form.
		s.Headers = nil
		b, _ := s.MarshalJSON()
		id = string(b)
	}
	path := s.Path
	if s.IsLocal() {
		path = ""
	}
	return appendKey(dst, string(s.Kind), id, s.Ref, path)
}

// keyOf joins quoted fields with spaces: unambiguous, and cheap enough to
// compute per request.
func keyOf(kind, id, ref, path string) string {
	return string(appendKey(nil, kind, id, ref, path))
}

func appendKey(dst []byte, kind, id, ref, path string) []byte {
	dst = strconv.AppendQuote(dst, kind)
	dst = strconv.AppendQuote(append(dst, ' '), id)
	dst = strconv.AppendQuote(append(dst, ' '), ref)
	return strconv.AppendQuote(append(dst, ' '), path)
}

// RepoOwnerWildcard is the lower-case owner of an "owner/*" entry, "" for
// any other kind.
func (s PolicySource) RepoOwnerWildcard() string {
	if s.Pattern == PatternOwner {
		return strings.ToLower(s.Owner)
	}
	return ""
}

// ParsePolicySource decodes a policy list entry: a marketplace source
// object (see plugin.DecodeMarketplaceSource), a hostPattern or
// pathPattern object, or the "owner/*" string.
func ParsePolicySource(raw []byte) (PolicySource, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return PolicySource{}, err
		}
		owner, ok := strings.CutSuffix(s, "/*")
		if !ok || !ownerRE.MatchString(owner) {
			return PolicySource{}, fmt.Errorf("string entry %q: the only string form is the repository wildcard \"owner/*\"", s)
		}
		return PolicySource{Pattern: PatternOwner, Owner: owner}, nil
	}
	kind, fields, err := plugin.ReadSourceObject(raw)
	if err != nil {
		return PolicySource{}, err
	}
	field, isPattern := patternFields[PatternKind(kind)]
	if !isPattern {
		if !plugin.MarketplaceKind(kind).Known() {
			return PolicySource{}, fmt.Errorf("unknown source kind %q (want one of %s, %s, %s)", kind, plugin.MarketplaceKindNames(), PatternHost, PatternPath)
		}
		src, err := plugin.DecodeMarketplaceSource(raw)
		if err != nil {
			return PolicySource{}, err
		}
		return PolicySource{MarketplaceSource: src}, nil
	}
	if err := plugin.CheckSourceObjectFields(kind, fields, []string{field}); err != nil {
		return PolicySource{}, err
	}
	v, ok := fields[field]
	if !ok {
		return PolicySource{}, fmt.Errorf("%s source needs %q", kind, field)
	}
	var expr string
	if err := json.Unmarshal(v, &expr); err != nil {
		return PolicySource{}, fmt.Errorf("%q must be a string, got %s", field, plugin.JSONKind(v))
	}
	if expr == "" {
		return PolicySource{}, fmt.Errorf("%s source needs a non-empty %q", kind, field)
	}
	if _, err := regexp.Compile(expr); err != nil {
		return PolicySource{}, fmt.Errorf("%s is not a valid regular expression: %v", field, err)
	}
	s := PolicySource{Pattern: PatternKind(kind)}
	if s.Pattern == PatternHost {
		s.HostPattern = expr
	} else {
		s.PathPattern = expr
	}
	return s, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
