package web

import "time"

// Fleet pages: the inventory by plugin, one plugin's machines, one machine,
// the revocations and one revocation's convergence.

// Page names of the fleet pages.
const (
	PageInventory   = "inventory"
	PageFleetPlugin = "fleetplugin"
	PageMachine     = "machine"
	PageRevocations = "revocations"
	PageRevocation  = "revocation"
)

// CountRow is one value of a count (a version, a digest, a state...).
type CountRow struct {
	Value string
	Count int
	// Unknown marks a digest that matches no version the catalog knows.
	Unknown bool
}

// FleetPluginRow is one plugin across the fleet.
type FleetPluginRow struct {
	ID             string
	URL            string // its fleet page
	Machines       int
	UnknownDigests int
	Versions       []CountRow
	States         []CountRow
	Installs       []CountRow
}

// InventoryView is the inventory by plugin.
type InventoryView struct {
	Layout
	Plugins []FleetPluginRow
	// NextURL is the following page; empty on the last.
	NextURL string
}

// FleetInstall is one install of a plugin on a machine.
type FleetInstall struct {
	Plugin        string
	PluginURL     string
	Version       string
	Digest        string
	UnknownDigest bool
	Scope         string
	Install       string
	Enabled       bool
	State         string
	Reason        string
}

// FleetMachineRow is one machine in a list.
type FleetMachineRow struct {
	ID       string
	URL      string
	LastSeen time.Time
	Installs []FleetInstall
}

// FleetPluginView is one plugin's machines.
type FleetPluginView struct {
	Layout
	Plugin         FleetPluginRow
	CatalogURL     string // the plugin's catalog page, when the catalog knows it
	CatalogVersion string
	CatalogDigest  string
	Digests        []CountRow
	Machines       []FleetMachineRow
	NextURL        string
	// Adoption charts the machines per version, day by day.
	Adoption *Chart
}

// MachineView is one machine's inventory.
type MachineView struct {
	Layout
	ID          string
	Hostname    string
	User        string
	OS          string
	ClientKind  string
	ClientVer   string
	Token       string
	Received    time.Time
	LastSeen    time.Time
	Indexing    bool
	Plugins     []FleetInstall
	PluginCount int
}

// RevocationRow is one active revocation.
type RevocationRow struct {
	ID      string
	URL     string
	What    string // "deploy@corp 1.2.0" or a digest
	Reason  string
	By      string
	Created time.Time
}

// RevocationsView lists the active revocations.
type RevocationsView struct {
	Layout
	Revocations []RevocationRow
	// NextURL is the following page; empty on the last.
	NextURL string
}

// RevocationView is one revocation's convergence: the machines still
// reporting what it revokes as active, most recently seen first.
type RevocationView struct {
	Layout
	Revocation RevocationRow
	Active     int
	Machines   []FleetMachineRow
	Truncated  bool
	// Convergence charts the machines running it active, day by day
	// (nil when the revocation names no plugin).
	Convergence *Chart
}

// FleetSummary is the line a plugin's catalog page shows to those who may
// read the fleet: "on N machines, M with an unknown digest".
type FleetSummary struct {
	Machines       int
	UnknownDigests int
	URL            string
}
