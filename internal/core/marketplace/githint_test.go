package marketplace

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/plugin"
)

func TestGitFailureHints(t *testing.T) {
	g := &gitClient{net: &fetch.Config{}}
	ssh := plugin.MarketplaceSource{Kind: plugin.MktGit, URL: "git@git.corp.example:team/plugins.git"}
	err := g.fail(ssh, "clone", fmt.Errorf("ssh: handshake failed: %w", &knownhosts.KeyError{}))
	hint := plugin.HintOf(err)
	for _, want := range []string{"known_hosts", "ssh-keyscan git.corp.example >> ~/.ssh/known_hosts"} {
		if !strings.Contains(hint, want) {
			t.Errorf("known_hosts hint %q lacks %q", hint, want)
		}
	}
	file := plugin.MarketplaceSource{Kind: plugin.MktGit, URL: "file:///srv/none"}
	err = g.fail(file, "clone", fmt.Errorf("repository not found"))
	if hint := plugin.HintOf(err); strings.Contains(hint, "TOKEN") || !strings.Contains(hint, "is a git repository") {
		t.Errorf("file:// hint = %q", hint)
	}
}
