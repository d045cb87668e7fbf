package web

import "time"

// PageToolPins is the admin page of pinned MCP tool definitions.
const PageToolPins = "toolpins"

// ToolPinsView is the tool pins page: the definitions machines report
// that no pin approves (each with an approve form), then the pins.
type ToolPinsView struct {
	Layout
	Drift []ToolPinDriftRow
	Pins  []ToolPinRow
}

// ToolPinDriftRow is one set of definitions no pin approves. Pinned is
// empty for a server nothing pins yet.
type ToolPinDriftRow struct {
	Plugin, Server   string
	Observed, Pinned string
	Machines         int
	LastSeen         time.Time
}

// ToolPinRow is one pin.
type ToolPinRow struct {
	Plugin, Server, Hash string
	By                   string
	Approved             time.Time
	Note                 string
}
