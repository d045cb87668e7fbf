package policy

import "github.com/wharfhq/wharf/plugin"

func mustID(s string) plugin.ID { return plugin.MustParseID(s) }
