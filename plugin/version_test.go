package plugin

import "testing"

func TestVersionOfOrder(t *testing.T) {
	const c1 = "0123456789abcdef0123456789abcdef01234567"
	const c2 = "fedcba9876543210fedcba9876543210fedcba98"
	for _, tc := range []struct {
		name string
		in   VersionSources
		want string
	}{
		{"manifest wins", VersionSources{Manifest: "1.0.0", Entry: "2.0.0", Fetched: "3.0.0", SourceCommit: c1, MarketplaceCommit: c2}, "1.0.0"},
		{"entry next", VersionSources{Entry: "2.0.0", Fetched: "3.0.0", SourceCommit: c1, MarketplaceCommit: c2}, "2.0.0"},
		{"fetched next", VersionSources{Fetched: "3.0.0", SourceCommit: c1, MarketplaceCommit: c2}, "3.0.0"},
		{"source commit", VersionSources{SourceCommit: c1, MarketplaceCommit: c2}, c1[:ShortCommitLen]},
		{"marketplace commit", VersionSources{MarketplaceCommit: c2}, c2[:ShortCommitLen]},
		{"not a commit is skipped", VersionSources{SourceCommit: "main", MarketplaceCommit: c2}, c2[:ShortCommitLen]},
		{"nothing", VersionSources{SourceCommit: "short"}, ""},
	} {
		if got := VersionOf(tc.in); got != tc.want {
			t.Errorf("%s: VersionOf = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestComponentNameNamespaces(t *testing.T) {
	for _, tc := range []struct {
		kind ComponentKind
		want string
	}{
		{KindCommand, "fmt:run"}, {KindSkill, "fmt:run"}, {KindAgent, "fmt:run"},
		{KindOutputStyle, "fmt:run"}, {KindHook, "fmt:run"},
		{KindMCPServer, "plugin:fmt:run"}, {KindLSPServer, "plugin:fmt:run"},
	} {
		if got := ComponentName(tc.kind, "fmt", "run"); got != tc.want {
			t.Errorf("ComponentName(%s) = %q, want %q", tc.kind, got, tc.want)
		}
	}
}
