package web

import "time"

// PageLayerDelete asks to confirm a layer's deletion.
const PageLayerDelete = "layerdelete"

// LayerRevision is one change of a layer in its history, with what it
// changed against the revision before it.
type LayerRevision struct {
	Seq          uint64
	Time         time.Time
	Action       string // create, update, delete
	LayerVersion uint64
	Actor        string
	Changes      []SettingChange
	// Restorable is set on a past revision whose document can be written
	// again (not the current one, not a deletion).
	Restorable bool
	Current    bool
}

// SettingChange is one difference between two revisions of a layer: a
// policy key, the rank or a Rego module, added, removed or changed.
type SettingChange struct {
	// What names it: a settings key, "rank", or "module x.rego".
	What string
	// Kind is added, removed or changed.
	Kind   string
	Before string
	After  string
}

// LayerDeleteView asks to confirm deleting a layer.
type LayerDeleteView struct {
	Layout
	Name    string
	Version uint64
	Rank    int
	Keys    []string
}
