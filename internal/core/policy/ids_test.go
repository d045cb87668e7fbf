package policy

import (
	"encoding/json"

	"github.com/wharfhq/wharf/plugin"
)

func mustID(s string) plugin.ID { return plugin.MustParseID(s) }

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
