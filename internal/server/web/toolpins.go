package web

import "time"

// PageToolPins is the admin page of pinned MCP tool definitions.
const PageToolPins = "toolpins"

// ToolPinsView is the tool pins page: the definitions machines report
// that no pin approves (each with what changed and an approve form), the
// pins with the definitions they approve, and where pin from first
// report is on.
type ToolPinsView struct {
	Layout
	Drift []ToolPinDriftRow
	Pins  []ToolPinRow
	Auto  []ToolPinAutoRow
}

// ToolPinDriftRow is one set of definitions no pin approves. Pinned is
// empty for a server nothing pins yet. Known says reports carried the
// definitions, so Changes says what differs from the pinned ones (every
// tool added, when nothing is pinned).
type ToolPinDriftRow struct {
	Plugin, Server   string
	Observed, Pinned string
	Machines         int
	LastSeen         time.Time
	Known            bool
	Changes          []ToolChangeRow
}

// ToolChangeRow is one tool's change: Kind is added, removed, description
// or schema; Old and New the approved and reported text.
type ToolChangeRow struct {
	Tool, Kind string
	Old, New   string
}

// ToolPinRow is one pin, with the definitions it approves when a report
// carried them.
type ToolPinRow struct {
	Plugin, Server, Hash string
	By                   string
	Approved             time.Time
	Note                 string
	Known                bool
	Tools                []ToolDefinitionRow
}

// ToolDefinitionRow is one approved tool: its name, description and input
// schema (canonical JSON).
type ToolDefinitionRow struct {
	Name, Description, Schema string
}

// ToolPinAutoRow is one pin-from-first-report setting: Scope is
// marketplace or plugin.
type ToolPinAutoRow struct {
	Scope, Name string
	On          bool
}
