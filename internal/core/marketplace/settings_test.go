package marketplace

import (
	"reflect"
	"testing"

	"github.com/wharfhq/wharf/internal/core/settings"
)

// Every source the command line accepts has one settings form, the one
// policy matches against; a source with no such form is an error, not a
// silently empty source.
func TestSourceSettings(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want settings.MarketplaceSource
	}{
		{"corp/plugins@v2", settings.MarketplaceSource{Source: settings.KindGitHub, Repo: "corp/plugins", Ref: "v2"}},
		{"https://git.corp.example/team/plugins.git#main", settings.MarketplaceSource{Source: settings.KindGit, URL: "https://git.corp.example/team/plugins.git", Ref: "main"}},
		{"https://corp.example/catalog/marketplace.json", settings.MarketplaceSource{Source: settings.KindURL, URL: "https://corp.example/catalog/marketplace.json"}},
	} {
		src, err := ParseSource(tt.in)
		if err != nil {
			t.Fatalf("ParseSource(%q): %v", tt.in, err)
		}
		got, err := src.Settings()
		if err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: settings form %+v, want %+v", tt.in, got, tt.want)
		}
	}
	dir := t.TempDir()
	got, err := Source{Kind: KindDirectory, Path: dir}.Settings()
	if err != nil || got.Source != settings.KindDirectory || got.Path != dir {
		t.Errorf("directory: %+v, %v", got, err)
	}
	if _, err := (Source{Kind: "svn", URL: "svn://x"}).Settings(); err == nil {
		t.Errorf("a kind settings does not know converted without an error")
	}
}
