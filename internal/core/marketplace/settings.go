package marketplace

import (
	"encoding/json"
	"fmt"

	"github.com/wharfhq/wharf/internal/core/settings"
)

// Settings returns the settings form of s, the one policy matches against
// ({"source":"github","repo":...} and its kin): the two share one JSON
// shape, and this is the one place that converts. An error means s has no
// settings form (a kind or field settings does not know).
func (s Source) Settings() (settings.MarketplaceSource, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return settings.MarketplaceSource{}, err
	}
	out, err := settings.ParseSource(b)
	if err != nil {
		return settings.MarketplaceSource{}, fmt.Errorf("marketplace source %s: %w", b, err)
	}
	return out, nil
}
