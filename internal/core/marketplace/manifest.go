package marketplace

import (
	"errors"
	"fmt"
	"strings"

	"github.com/wharfhq/wharf/plugin"
)

// readManifest reads and parses the marketplace.json at path. A parse error
// lists every error diagnostic and names the command that shows them all.
func readManifest(path string) (*plugin.Marketplace, error) {
	m, diags, err := plugin.ReadMarketplaceFile(path)
	if err == nil {
		return m, nil
	}
	var pe *plugin.Error
	if errors.As(err, &pe) && pe.Type == plugin.TypeNotFound {
		return nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeNotFound, Object: path,
			Err:  fmt.Errorf("no marketplace.json at %s", path),
			Hint: "a marketplace has .claude-plugin/marketplace.json at its root; point at that directory or at the file itself"}
	}
	var lines []string
	for _, d := range diags {
		if d.Severity == plugin.SeverityError {
			lines = append(lines, d.String())
		}
	}
	cause := err
	if len(lines) > 1 {
		cause = fmt.Errorf("%w\n  %s", err, strings.Join(lines, "\n  "))
	}
	return nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeManifestParse, Object: path,
		Err: cause, Hint: "see every problem with: wharf validate " + path}
}
