package marketplace

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/wharfhq/wharf/internal/core/lazyre"
	"github.com/wharfhq/wharf/plugin"
)

// ReservedNames are the marketplace names Claude Code reserves for
// Anthropic's official, community and directory marketplaces (compared
// lower-cased, exactly). Only a source in the anthropics GitHub
// organization may use them.
var ReservedNames = plugin.ReservedMarketplaceNames

// SpecialNames name plugin sources that are not marketplaces (the agent's
// built-in plugins, --plugin-dir plugins, skills folders, synced and test
// plugins); no marketplace may take them, from any source.
var SpecialNames = []string{plugin.SourceBuiltin, plugin.SourceInline, "skills-dir", "synced", "claude-plugin-test"}

// OfficialOrg is the GitHub organization allowed to use reserved names.
const OfficialOrg = "anthropics"

// ErrReservedName: the marketplace name is reserved for, or imitates,
// Anthropic's official marketplaces and the source is not in the anthropics
// GitHub organization.
var ErrReservedName = errors.New("marketplace name reserved for official Anthropic marketplaces")

// Claude Code's reading of an impersonating marketplace name (2.1.332,
// checked against the real CLI by TestClaudeCompatMarketplaceNames):
// "official" beside "claude" or "anthropic" with only separators between
// them, or a name that starts with "claude" or "anthropic" followed (after
// separators) by marketplace, plugins, official, directory or directories.
var (
	besideOfficialRe = lazyre.New(`official[^a-z0-9]*(anthropic|claude)|(anthropic|claude)[^a-z0-9]*official`)
	leadRe           = lazyre.New(`^(anthropic|claude)[^a-z0-9]*(marketplace|plugins|official|directory|directories)`)
	leadWordsRe      = lazyre.New(`^(anthropic|claude)(marketplace|plugins|official|directory|directories)s?$`)
)

// IsReservedName reports whether name is reserved (ReservedNames) or reads
// as an official Anthropic marketplace, as Claude Code judges both: a
// reserved name is refused unless it comes from the anthropics
// organization, and so is an imitation. Names such as "claude-skills" or
// "anthropic-agent-skills-local" are neither.
func IsReservedName(name string) bool {
	n := strings.ToLower(name)
	for _, r := range ReservedNames {
		if n == r {
			return true
		}
	}
	return imitates(n)
}

// imitates is Claude Code's impersonation test on a lower-cased name.
func imitates(n string) bool {
	for i := 0; i < len(n); i++ {
		if n[i] < 0x20 || n[i] > 0x7e {
			return true
		}
	}
	trimmed := strings.TrimLeftFunc(n, notAlnum)
	if besideOfficialRe.MatchString(n) || leadRe.MatchString(n) || leadRe.MatchString(trimmed) {
		return true
	}
	words := strings.FieldsFunc(n, notAlnum)
	squashed := strings.Join(words, "")
	for _, s := range []string{"officialanthropic", "officialclaude", "anthropicofficial", "claudeofficial"} {
		if strings.Contains(squashed, s) {
			return true
		}
	}
	// The words joined one by one, up to one past the longest lead and
	// suffix: "claude-plugin-s" reads as "claudeplugins".
	joined := ""
	for _, w := range words {
		joined += w
		if leadWordsRe.MatchString(joined) {
			return true
		}
		if len(joined) > len("anthropic")+len("directories")+1 {
			break
		}
	}
	return false
}

// Imitates reports a name that reads as an official Anthropic marketplace
// without being one of ReservedNames: Claude Code's validator refuses it.
func Imitates(name string) bool {
	n := strings.ToLower(name)
	for _, r := range ReservedNames {
		if n == r {
			return false
		}
	}
	return imitates(n)
}

// IsSpecialName reports a name of a plugin source that is not a
// marketplace.
func IsSpecialName(name string) bool {
	n := strings.ToLower(name)
	for _, s := range SpecialNames {
		if n == s {
			return true
		}
	}
	return false
}

func notAlnum(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
}

// IsOfficialSource reports whether src is a repository of the anthropics
// GitHub organization: owner/repo shorthand, or a git URL on github.com.
func IsOfficialSource(src plugin.MarketplaceSource) bool {
	switch src.Kind {
	case plugin.MktGitHub:
		owner, _, _ := strings.Cut(src.Repo, "/")
		return strings.EqualFold(owner, OfficialOrg)
	case plugin.MktGit:
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
// settings, and the name of a plugin source that is not a marketplace
// (builtin, inline, skills-dir, synced, claude-plugin-test) from any
// source. The error is a *plugin.Error (layer trust) wrapping
// ErrReservedName.
func CheckName(name string, src plugin.MarketplaceSource) error {
	if IsSpecialName(name) {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeTrustRejected, Object: name,
			Err:  fmt.Errorf("the name %q names plugins that do not come from a marketplace, so no marketplace can use it: %w", name, ErrReservedName),
			Hint: "add it under another name with --name (for example --name " + suggestName(name) + ")"}
	}
	if !IsReservedName(name) || IsOfficialSource(src) {
		return nil
	}
	return &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeTrustRejected, Object: name,
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
	if s == "" || IsReservedName(s) || IsSpecialName(s) {
		s = "local"
	}
	return s + "-copy"
}
