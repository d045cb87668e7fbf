package main

import "github.com/wharfhq/wharf/internal/core/layout"

// Env is WHARF_HOME and the paths under it, one method per path, so no
// command builds a path by hand. The layout itself is package layout's.
type Env = layout.Paths
