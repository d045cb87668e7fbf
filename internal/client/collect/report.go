package collect

import (
	"os"
	"os/user"
	"runtime"
	"runtime/debug"
	"sort"
	"time"

	"github.com/wharfhq/wharf/internal/client/load"
	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/policy"
)

// Machine returns the machine part of a report: id, with the host name,
// the OS user and GOOS/GOARCH as labels.
func Machine(id string) inventory.Machine {
	m := inventory.Machine{ID: id, OS: runtime.GOOS + "/" + runtime.GOARCH}
	m.Hostname, _ = os.Hostname()
	if u, err := user.Current(); err == nil {
		m.User = u.Username
	}
	return m
}

// ClientVersion is the module version wharf was built as, "dev" for a
// build from a work tree.
func ClientVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// New assembles a report, plugins sorted by id then scope.
func New(m inventory.Machine, kind string, plugins []inventory.Plugin, now time.Time) inventory.Report {
	if plugins == nil {
		plugins = []inventory.Plugin{}
	}
	sort.SliceStable(plugins, func(i, j int) bool {
		if plugins[i].ID != plugins[j].ID {
			return plugins[i].ID < plugins[j].ID
		}
		return plugins[i].Scope < plugins[j].Scope
	})
	return inventory.Report{Machine: m, Client: inventory.Client{Kind: kind, Version: ClientVersion()}, Plugins: plugins, Created: now.UTC()}
}

// Hash identifies what a report says, apart from when it was made: two
// reports with the same hash need not both be sent.
func Hash(r inventory.Report) string { return "sha256:" + inventory.Hash(r) }

// FromStatus turns the loader's rows (install.Installer.List, the load pass: the states of
// a session started now) into report entries. A row a revocation matches
// is reported revoked, with the revocation's id and reason, whatever the
// loader made of it: a client holding that revocation never loads it.
func FromStatus(rows []load.Row, revs policy.Revocations) []inventory.Plugin {
	out := make([]inventory.Plugin, 0, len(rows))
	for _, r := range rows {
		p := inventory.Plugin{ID: r.ID.String(), Version: r.Version, Digest: r.Digest, Scope: r.Scope,
			Install: inventory.InstallUser, Enabled: r.Enabled, State: stateOf(r.Status)}
		switch {
		case r.Forced == "on":
			p.Install = inventory.InstallManaged
		case r.Auto:
			p.Install = inventory.InstallDependency
		}
		switch {
		case r.Chain != "":
			p.Reason = r.Chain
		case len(r.Errors) > 0:
			p.Reason = r.Errors[0]
		}
		if rv, ok := revs.Match(r.ID, r.Version, r.Digest); ok {
			p.State, p.Reason = inventory.StateRevoked, policy.RevokedReason(rv)
		}
		p.Reason = truncate(p.Reason, maxReason)
		out = append(out, p)
	}
	return out
}

// Sideloaded is a plugin a session loaded from a directory (--plugin-dir)
// rather than from the installed registry.
type Sideloaded struct {
	ID      string // name@marketplace as the session names it
	Version string
	Digest  string
	State   string
	Reason  string
}

// FromSideloaded turns a session's sideloaded plugins into report entries.
func FromSideloaded(sl []Sideloaded) []inventory.Plugin {
	out := make([]inventory.Plugin, 0, len(sl))
	for _, s := range sl {
		// A session's plugin dir is this machine's alone: scope local.
		out = append(out, inventory.Plugin{ID: s.ID, Version: s.Version, Digest: s.Digest, Scope: "local",
			Install: inventory.InstallSideloaded, Enabled: true, State: s.State, Reason: truncate(s.Reason, maxReason)})
	}
	return out
}

// maxReason bounds one reason in a report.
const maxReason = 512

func stateOf(status string) string {
	switch status {
	case load.StatusActive:
		return inventory.StateActive
	case load.StatusDemoted:
		return inventory.StateDemoted
	case load.StatusDisabled:
		return inventory.StateDisabled
	}
	return inventory.StateFailed
}
