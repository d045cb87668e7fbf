package tokens

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/wharfhq/wharf/internal/core/lazyre"
)

// Target selects the tokens a policy layer or a channel applies to: those
// whose Identity has one of Groups or one of Labels. The empty target is
// the organization: it applies to every token.
type Target struct {
	Groups []string `json:"groups,omitempty"`
	Labels []string `json:"labels,omitempty"`
}

// Bounds of a target and of a token's groups and labels.
const (
	MaxTargetGroups = 32
	MaxTargetLabels = 32
)

// Compiled on first use (lazyre): the bounded repetitions would
// otherwise be compiled at the start of every command that links this
// package.
var (
	// groupRE: an identity provider's group name or an admin's: letters,
	// digits and . _ - @ : / (Keycloak's group paths start with /), no
	// spaces or control characters.
	groupRE = lazyre.New(`^[A-Za-z0-9/][A-Za-z0-9._@:/-]{0,127}$`)
	// labelKeyRE and labelValueRE: a machine label key=value.
	labelKeyRE   = lazyre.New(`^[a-z0-9][a-z0-9._/-]{0,62}$`)
	labelValueRE = lazyre.New(`^[A-Za-z0-9._-]{0,63}$`)
)

// TargetError is a group or label that is not acceptable; Field names it
// as the request wrote it (groups[2], labels[0]).
type TargetError struct {
	Field string
	Msg   string
}

func (e *TargetError) Error() string { return e.Field + ": " + e.Msg }

// ValidateGroups checks group names from outside (field: the JSON field
// or flag that carried them) and returns them sorted without repeats.
func ValidateGroups(field string, gs []string) ([]string, error) {
	if len(gs) > MaxTargetGroups {
		return nil, &TargetError{Field: field, Msg: fmt.Sprintf("%d groups; the limit is %d", len(gs), MaxTargetGroups)}
	}
	for i, g := range gs {
		if !groupRE.MatchString(g) {
			return nil, &TargetError{Field: fmt.Sprintf("%s[%d]", field, i),
				Msg: fmt.Sprintf("group %q must be 1 to 128 letters, digits, '.', '_', '-', '@', ':' or '/', starting with a letter, digit or '/'", trim(g))}
		}
	}
	return sortedUnique(gs), nil
}

// ValidateLabels checks machine labels (key=value) from outside and
// returns them sorted without repeats.
func ValidateLabels(field string, ls []string) ([]string, error) {
	if len(ls) > MaxTargetLabels {
		return nil, &TargetError{Field: field, Msg: fmt.Sprintf("%d labels; the limit is %d", len(ls), MaxTargetLabels)}
	}
	for i, l := range ls {
		k, v, ok := strings.Cut(l, "=")
		if !ok || !labelKeyRE.MatchString(k) || !labelValueRE.MatchString(v) {
			return nil, &TargetError{Field: fmt.Sprintf("%s[%d]", field, i),
				Msg: fmt.Sprintf("label %q must be key=value: a key of lower-case letters, digits, '.', '_', '/' or '-' (up to 63), a value of letters, digits, '.', '_' or '-' (up to 63), e.g. os=linux", trim(l))}
		}
	}
	return sortedUnique(ls), nil
}

// Validate checks a target from outside (prefix: the JSON path of the
// target, e.g. "target") and puts it in canonical form.
func (t *Target) Validate(prefix string) error {
	if prefix != "" {
		prefix += "."
	}
	gs, err := ValidateGroups(prefix+"groups", t.Groups)
	if err != nil {
		return err
	}
	ls, err := ValidateLabels(prefix+"labels", t.Labels)
	if err != nil {
		return err
	}
	t.Groups, t.Labels = gs, ls
	return nil
}

// Empty reports whether the target is the organization (everyone).
func (t *Target) Empty() bool { return t == nil || len(t.Groups) == 0 && len(t.Labels) == 0 }

// Matches reports whether the target applies to id: the organization
// applies to everyone; otherwise id must have one of the groups or one
// of the labels.
func (t *Target) Matches(id Identity) bool {
	if t.Empty() {
		return true
	}
	for _, g := range id.Groups {
		if slices.Contains(t.Groups, g) {
			return true
		}
	}
	for _, l := range id.Labels {
		if slices.Contains(t.Labels, l) {
			return true
		}
	}
	return false
}

// String is the target as people read it: "groups data-team; labels
// os=linux", or "organization".
func (t *Target) String() string {
	if t.Empty() {
		return "organization"
	}
	var parts []string
	if len(t.Groups) > 0 {
		parts = append(parts, "groups "+strings.Join(t.Groups, ","))
	}
	if len(t.Labels) > 0 {
		parts = append(parts, "labels "+strings.Join(t.Labels, ","))
	}
	return strings.Join(parts, "; ")
}

// HasGroup reports whether id is in group g.
func (id Identity) HasGroup(g string) bool { return slices.Contains(id.Groups, g) }

func sortedUnique(ss []string) []string {
	if len(ss) == 0 {
		return nil
	}
	out := slices.Clone(ss)
	sort.Strings(out)
	return slices.Compact(out)
}

func trim(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
