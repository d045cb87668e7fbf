package agent

import "github.com/wharfhq/wharf/internal/client/load"

// Policy is what the loader asks before it loads a plugin, a surface of
// components, a hook or a session plugin dir. *policy.Engine implements it.
// Implementations must be safe for concurrent use, and Decide must be a pure
// function of the request and Version: *policy.Engine memoizes decisions by
// version (in memory; opened with policy.WithMemoFile it keeps them between
// processes, and the Runtime reads that file early and saves it after each
// load unless Options.NoMemo is set).
type Policy = load.Policy
