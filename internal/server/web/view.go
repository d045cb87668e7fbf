package web

import (
	"sort"
	"time"
)

// Layout is what every page shows around its content: who is signed in,
// where they are, and the CSRF token every POST form carries.
type Layout struct {
	Title string
	// Nav names the active navigation entry: catalog, policy or audit.
	Nav      string
	SignedIn bool
	Role     string
	TokenID  string
	IsAdmin  bool
	// User is the signed-in person (email, else subject) when the
	// session came from single sign-on; empty for a pasted token.
	User string
	// CSRF is the per-session token the POST forms send back in the
	// hidden field "csrf".
	CSRF     string
	Messages []Message
}

// Message is a notice at the top of a page or next to a form.
type Message struct {
	// Kind is error, warning or ok; it picks the style and the ARIA role.
	Kind string
	Text string
}

// SignInView is the sign-in form.
type SignInView struct {
	Layout
	Next string
	// FormCSRF guards the sign-in form itself (double-submit cookie).
	FormCSRF string
	// SSOName names the identity provider of "Sign in with ..."; empty
	// when the server has no single sign-on.
	SSOName string
}

// Option is one choice of a select.
type Option struct {
	Value    string
	Label    string
	Selected bool
}

// CatalogQuery is the catalog page's filter form, as submitted.
type CatalogQuery struct {
	Text        string
	Marketplace string
	Category    string
	Tag         string
	// Decision is "", "allowed" or "blocked".
	Decision string
}

// CatalogView is the catalog page.
type CatalogView struct {
	Layout
	Query        CatalogQuery
	Marketplaces []Option
	Categories   []Option
	Tags         []Option
	Decisions    []Option
	Plugins      []PluginRow
	// Total is the number of catalog entries before filtering.
	Total         int
	PolicyVersion string
	// Matched is how many plugins match the filters; First and Last
	// number this page's (from 1; zero when the page is empty).
	Matched, First, Last int
	// NextURL is the following page of matches; empty on the last.
	// PrevURL is the page before; empty on the first.
	NextURL, PrevURL string
}

// PluginRow is one plugin in a list.
type PluginRow struct {
	ID          string
	Name        string
	Marketplace string
	Version     string
	Description string
	Category    string
	Tags        []string
	URL         string
	Decision    DecisionView
}

// DecisionView is a policy decision as shown to a person.
type DecisionView struct {
	Allowed bool
	// Forced is "on", "off" or "".
	Forced string
	// Label is the one-word state: allowed, blocked, forced on, forced off.
	Label    string
	Reasons  []ReasonView
	Warnings []string
}

// Class is the CSS modifier for the decision's badge.
func (d DecisionView) Class() string {
	switch {
	case d.Forced == "off" || !d.Allowed:
		return "blocked"
	case d.Forced == "on":
		return "forced"
	}
	return "allowed"
}

// ReasonView names the layer and rule behind a decision.
type ReasonView struct {
	Layer   string
	Rule    string
	Message string
}

// ComponentGroup is the components of one kind.
type ComponentGroup struct {
	Kind  string
	Title string
	Items []ComponentItem
}

// ComponentItem is one component with the name an agent registers it under.
type ComponentItem struct {
	Name       string
	Namespaced string
	Path       string
}

// DependencyRow is one declared dependency.
type DependencyRow struct {
	ID  string
	URL string
	// State is allowed, blocked or missing.
	State string
}

// SignatureRow is the verdict on one published signature.
type SignatureRow struct {
	KeyID   string
	Valid   bool
	Trusted bool
	Error   string
}

// PluginView is the plugin detail page.
type PluginView struct {
	Layout
	Plugin       PluginRow
	Components   []ComponentGroup
	Dependencies []DependencyRow
	Graph        Graph
	Digest       string
	// SignatureStatus sums up Signatures in a sentence.
	SignatureStatus string
	Signatures      []SignatureRow
	PolicyVersion   string
	// Fleet is shown to admin and ci: how many machines have the plugin.
	Fleet *FleetSummary
	// Capabilities is the capability set and findings of the version
	// shown; nil when the marketplace does not hold its files
	// (CapabilitiesError says why when they could not be read).
	Capabilities      *CapabilitiesView
	CapabilitiesError string
}

// LayerRow is one policy layer in the list.
type LayerRow struct {
	Name      string
	Rank      int
	Version   uint64
	Keys      []string
	Modules   int
	UpdatedAt time.Time
	UpdatedBy string
	URL       string
}

// PolicyView is the admin's list of policy layers.
type PolicyView struct {
	Layout
	Version  string
	Revision uint64
	Layers   []LayerRow
	// NewLayer is the name typed in the new-layer form, shown again with
	// an error when it is invalid.
	NewLayer string
}

// LayerView is the editor of one layer's settings, with the impact preview
// once requested.
type LayerView struct {
	Layout
	Name string
	New  bool
	// Version is the layer version the edit started from; saving sends it
	// as If-Match, so a concurrent change is reported instead of lost.
	Version  uint64
	Rank     int
	Settings string
	Modules  []string
	// Errors are validation problems of Settings; Warnings come from the
	// policy engine (unknown keys, values that fail closed).
	Errors   []string
	Warnings []string
	Impact   *ImpactView
	// Conflict is set when a save found a newer version.
	Conflict string
	Saved    bool
	// RankHelp says what the ranks mean and which the layers use now; the
	// form's default rank is the one the server gives a layer written
	// without a rank.
	RankHelp string
	// History is the layer's revisions, newest first.
	History []LayerRevision
	// Restored is the history entry just restored (0: none).
	Restored uint64
}

// ImpactView lists every catalog plugin whose decision would change,
// grouped by the change and its reasons.
type ImpactView struct {
	Checked int
	Changes []ImpactRow
	// Groups are Changes grouped by (before, after, reasons), largest
	// group first.
	Groups []ImpactGroup
}

// ImpactGroup is the plugins whose decision changes the same way for the
// same reasons.
type ImpactGroup struct {
	Before  DecisionView
	After   DecisionView
	Reasons []ReasonView
	Rows    []ImpactRow
	// Open is whether the group's list starts unfolded (small groups).
	Open bool
}

// GroupImpact groups rows by their change and the reasons after it,
// largest group first (then by the first plugin), each group's rows in
// their order.
func GroupImpact(rows []ImpactRow) []ImpactGroup {
	var groups []ImpactGroup
	index := map[string]int{}
	for _, r := range rows {
		key := r.Before.Label + "\x00" + r.After.Label
		for _, rs := range r.After.Reasons {
			key += "\x00" + rs.Layer + "\x00" + rs.Rule + "\x00" + rs.Message
		}
		i, ok := index[key]
		if !ok {
			i = len(groups)
			index[key] = i
			groups = append(groups, ImpactGroup{Before: r.Before, After: r.After, Reasons: r.After.Reasons})
		}
		groups[i].Rows = append(groups[i].Rows, r)
	}
	sort.SliceStable(groups, func(i, j int) bool { return len(groups[i].Rows) > len(groups[j].Rows) })
	for i := range groups {
		groups[i].Open = len(groups[i].Rows) <= maxOpenGroup
	}
	return groups
}

// maxOpenGroup is the largest impact group listed unfolded.
const maxOpenGroup = 10

// ImpactRow is one plugin whose decision would change.
type ImpactRow struct {
	ID     string
	URL    string
	Before DecisionView
	After  DecisionView
}

// AuditFilter is the audit page's filter form, as typed.
type AuditFilter struct {
	Action string
	// Actor and Object match as case-insensitive substrings.
	Actor  string
	Object string
	// Since and Until bound the time (Until exclusive; a date includes
	// its whole day).
	Since string
	Until string
}

// DetailItem is one detail of an audit entry: a value or a list.
type DetailItem struct {
	Key   string
	Value string
	List  []string
}

// AuditRow is one audit entry.
type AuditRow struct {
	Seq    uint64
	Time   time.Time
	Action string
	Actor  string
	Role   string
	// User is the person the actor's token speaks for: email, else
	// subject; empty for machine tokens.
	User    string
	Object  string
	Details []DetailItem
}

// AuditView is the audit log page.
type AuditView struct {
	Layout
	Filter  AuditFilter
	Actions []Option
	Entries []AuditRow
	// NextURL is the link to the following page, empty on the last.
	NextURL string
}

// ErrorView is an error page (403, 404, 500...).
type ErrorView struct {
	Layout
	Status  int
	Heading string
	Message string
}
