package agent

import (
	"os/exec"
	"strings"
	"testing"
)

// An agent that embeds the runtime links no git client and no OpenPGP:
// fetching plugins is the distribution layer's job (install, marketplace,
// source), and the runtime only reads what is installed.
func TestAgentLinksNoFetchingCode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages; the test is not looking at the agent", len(deps))
	}
	banned := []string{
		"github.com/go-git/",
		"github.com/ProtonMail/go-crypto",
		"github.com/wharfhq/wharf/internal/client/install",
		"github.com/wharfhq/wharf/internal/core/marketplace",
		"github.com/wharfhq/wharf/internal/core/source",
	}
	for _, d := range deps {
		for _, b := range banned {
			if d == b || strings.HasPrefix(d, b) && (strings.HasSuffix(b, "/") || strings.HasPrefix(d[len(b):], "/")) {
				t.Errorf("agent links %s", d)
			}
		}
	}
}
