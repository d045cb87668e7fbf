package marketplace

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/wharfhq/wharf/internal/lazyre"
	"github.com/wharfhq/wharf/plugin"
)

// ReservedNames are the marketplace names Claude Code reserves for
// Anthropic's official marketplaces. Only a source in the anthropics GitHub
// organization may use them.
var ReservedNames = []string{
	"claude-code-marketplace",
	"claude-code-plugins",
	"claude-plugins-official",
	"anthropic-marketplace",
	"anthropic-plugins",
	"agent-skills",
	"knowledge-work-plugins",
	"life-sciences",
}

// OfficialOrg is the GitHub organization allowed to use reserved names.
const OfficialOrg = "anthropics"

// ErrReservedName: the marketplace name is reserved for, or imitates,
// Anthropic's official marketplaces and the source is not in the anthropics
// GitHub organization.
var ErrReservedName = errors.New("marketplace name reserved for official Anthropic marketplaces")

// lookAlikeRe matches names that impersonate an official marketplace, as
// Claude Code refuses them: any name with "anthropic" in it, "official"
// next to "claude", and "claude[-code]-<plugins|marketplace|official|skills|
// community>" in any spelling of the separators and plural.
var lookAlikeRe = lazyre.New(`anthropic|official.*claude|claude.*official|^claude[-_.]*(code[-_.]*)?(plugins?|marketplaces?|official|skills?|community)$`)

// IsReservedName reports whether name is reserved or looks like a reserved
// name (case and separators ignored).
func IsReservedName(name string) bool {
	n := strings.ToLower(name)
	for _, r := range ReservedNames {
		if n == r || squash(n) == squash(r) {
			return true
		}
	}
	return lookAlikeRe.MatchString(n)
}

// squash drops separators, so "claude_code.plugins" reads as
// "claudecodeplugins".
func squash(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' {
			return -1
		}
		return r
	}, s)
}

// IsOfficialSource reports whether src is a repository of the anthropics
// GitHub organization: owner/repo shorthand, or a git URL on github.com.
func IsOfficialSource(src Source) bool {
	switch src.Kind {
	case KindGitHub:
		owner, _, _ := strings.Cut(src.Repo, "/")
		return strings.EqualFold(owner, OfficialOrg)
	case KindGit:
		u := src.URL
		if rest, ok := strings.CutPrefix(u, "git@github.com:"); ok {
			owner, _, _ := strings.Cut(rest, "/")
			return strings.EqualFold(owner, OfficialOrg)
		}
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "https" && p.Scheme != "ssh") || !strings.EqualFold(p.Hostname(), "github.com") || p.Port() != "" {
			return false
		}
		owner, _, _ := strings.Cut(strings.TrimPrefix(p.Path, "/"), "/")
		return strings.EqualFold(owner, OfficialOrg)
	}
	return false
}

// CheckName refuses a reserved or look-alike marketplace name for a source
// outside the anthropics GitHub organization, as Claude Code does for
// `marketplace add`, an explicit --name, and marketplaces declared in
// settings. The error is a *plugin.Error (layer trust) wrapping
// ErrReservedName.
func CheckName(name string, src Source) error {
	if !IsReservedName(name) || IsOfficialSource(src) {
		return nil
	}
	return &plugin.Error{Layer: plugin.LayerTrust, Type: plugin.TypeTrustRejected, Object: name,
		Err: fmt.Errorf("the name %q is reserved for official Anthropic marketplaces; only repositories of github.com/%s/ can use it, and %s is not one: %w",
			name, OfficialOrg, src, ErrReservedName),
		Hint: "add it under another name with --name (for example --name " + suggestName(name) + ")"}
}

// suggestName offers a name that is not reserved.
func suggestName(name string) string {
	s := strings.ToLower(name)
	for _, w := range []string{"anthropics", "anthropic", "official", "claude"} {
		s = strings.ReplaceAll(s, w, "")
	}
	s = strings.Trim(regexp.MustCompile(`[-_.]{2,}`).ReplaceAllString(s, "-"), "-_.")
	if s == "" || IsReservedName(s) {
		s = "local"
	}
	return s + "-copy"
}
