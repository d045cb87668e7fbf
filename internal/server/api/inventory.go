package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/server/fleet"
	"github.com/wharfhq/wharf/internal/server/revocations"
	"github.com/wharfhq/wharf/plugin"
)

// The fleet inventory (package inventory): every client reports what it has
// installed with PUT /v1/inventory/machines/{id}; admins (and ci) read it by
// plugin, by machine, and find the machines that stopped reporting.

// Defaults of the per-machine report rate (Deps.ReportRate, ReportBurst).
const (
	defaultReportRate  = 1.0 / 10 // one report every 10 s, sustained
	defaultReportBurst = 6
	maxMachineLimiters = 1 << 17
)

// Error codes of the inventory.
const (
	// CodeMachineOwned is a report for a machine bound to another token.
	CodeMachineOwned = "machine-owned"
	// CodeQuotaExceeded is a report that would take its token past its
	// quota of machines or plugin ids.
	CodeQuotaExceeded = "quota-exceeded"
)

// ReportResult is the response of PUT /v1/inventory/machines/{id}.
type ReportResult struct {
	// Changed is false for a report equal to the stored one (a touch:
	// nothing was written).
	Changed bool `json:"changed"`
}

// PluginInventory is one plugin across the fleet.
type PluginInventory struct {
	fleet.Counts
	// UnknownDigests counts the installs whose digest matches no version
	// the server's catalog knows (a local edit, or a build from elsewhere).
	UnknownDigests int `json:"unknownDigests"`
	// CatalogVersion and CatalogDigest are what the catalog publishes
	// today; empty when the catalog does not know the plugin.
	CatalogVersion string `json:"catalogVersion,omitempty"`
	CatalogDigest  string `json:"catalogDigest,omitempty"`
}

// PluginInventoryList is one page of GET /v1/inventory/plugins.
type PluginInventoryList struct {
	Plugins []PluginInventory `json:"plugins"`
	// Next is the cursor of the following page; empty on the last.
	Next string `json:"next,omitempty"`
}

// HolderInstall is one install of a plugin on a machine, under the names
// of the report's plugins (inventory.Plugin), not the index's storage keys.
type HolderInstall struct {
	Version       string `json:"version"`
	Digest        string `json:"digest,omitempty"`
	Scope         string `json:"scope"`
	Install       string `json:"install"`
	Enabled       bool   `json:"enabled"`
	State         string `json:"state"`
	Reason        string `json:"reason,omitempty"`
	UnknownDigest bool   `json:"unknownDigest,omitempty"`
}

// PluginHolder is one machine that has the plugin.
type PluginHolder struct {
	Machine string `json:"machine"`
	// ClientKind is the kind of client whose report the machine sent last
	// (inventory.KindWharf, KindWharfAgent, KindClaudeCode).
	ClientKind string          `json:"clientKind"`
	LastSeen   time.Time       `json:"lastSeen"`
	Installs   []HolderInstall `json:"installs"`
}

// PluginMachines is GET /v1/inventory/plugins/{marketplace}/{name}.
type PluginMachines struct {
	Plugin   PluginInventory `json:"plugin"`
	Machines []PluginHolder  `json:"machines"`
	// Next is the cursor of the following page; empty on the last.
	Next string `json:"next,omitempty"`
}

// StaleMachines is GET /v1/inventory/stale.
type StaleMachines struct {
	Days     int          `json:"days"`
	Machines []fleet.Seen `json:"machines"`
	Next     string       `json:"next,omitempty"`
}

func (s *Server) machineLimiter() *rate.Limiter {
	return rate.NewLimiter(rate.Limit(s.deps.ReportRate), s.deps.ReportBurst)
}

func machineParam(c echo.Context) (string, error) {
	id := c.Param("id")
	if !inventory.ValidMachineID(id) {
		return "", badField("id", "%q is not a machine id (\"m-\" and 32 lowercase hex digits)", id)
	}
	return id, nil
}

func (s *Server) putInventory(c echo.Context) error {
	id, err := machineParam(c)
	if err != nil {
		return err
	}
	p := s.caller(c)
	if s.deps.ReportRate >= 0 {
		// Keyed by token and machine: another token cannot spend a
		// machine's budget (its reports are refused anyway).
		now := s.now()
		if l := s.machines.get(p.TokenID + " " + id); !l.AllowN(now, 1) {
			secs := int(max(1, 1/s.deps.ReportRate))
			return &APIError{Status: http.StatusTooManyRequests, Code: CodeRateLimited, RetryAfter: secs,
				Message: fmt.Sprintf("machine %s reports too often (limit %g/s, burst %d); clients report when their inventory changes; retry in %ds",
					id, s.deps.ReportRate, s.deps.ReportBurst, secs)}
		}
	}
	if ct := c.Request().Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return apiErr(http.StatusUnsupportedMediaType, CodeUnsupportedMedia, "Content-Type",
				"Content-Type %q is not JSON; send application/json", ct)
		}
	}
	raw, err := io.ReadAll(io.LimitReader(c.Request().Body, inventory.MaxReportBytes+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apiErr(http.StatusRequestEntityTooLarge, CodeTooLarge, "", "request body is larger than %d bytes", mbe.Limit)
		}
		return apiErr(http.StatusBadRequest, CodeBadRequest, "", "reading the report: %v", err)
	}
	if len(raw) > inventory.MaxReportBytes {
		return apiErr(http.StatusRequestEntityTooLarge, CodeTooLarge, "", "an inventory report is at most %d bytes", inventory.MaxReportBytes)
	}
	rep, err := inventory.DecodeBytes(raw)
	if err != nil {
		return reportError(err)
	}
	if rep.Machine.ID != id {
		return badField("machine.id", "the report is for machine %s but was sent to %s; PUT it to /v1/inventory/machines/%s", rep.Machine.ID, id, rep.Machine.ID)
	}
	changed, err := s.inv.PutWithin(p.TokenID, p.Quota, withoutDefinitions(rep))
	var oe *fleet.OwnerError
	if errors.As(err, &oe) {
		s.auditRefusal(c, http.StatusForbidden, p.TokenID, p.Role, "machine bound to another token")
		return withHint(&APIError{Status: http.StatusForbidden, Code: CodeMachineOwned, Field: "id", Message: oe.Error(), cause: err},
			"report with the token this machine first reported with, or remove the machine-id file to report as a new machine")
	}
	var qe *fleet.QuotaError
	if errors.As(err, &qe) {
		s.auditRefusal(c, http.StatusForbidden, p.TokenID, p.Role, "inventory quota: "+qe.What)
		field := "id"
		if qe.What == "plugins" {
			field = "plugins"
		}
		return withHint(&APIError{Status: http.StatusForbidden, Code: CodeQuotaExceeded, Field: field, Message: qe.Error(), cause: err},
			"the token's inventory quota is used up; ask the server's admin for a token for this machine, or for a larger maxMachines or maxPlugins")
	}
	if err != nil {
		return err
	}
	if err := s.observeTools(rep); err != nil {
		return err
	}
	s.pinFromReport(rep, p)
	if changed {
		s.recordHistory(rep) // ui_fleet_history.go
	}
	return c.JSON(http.StatusOK, ReportResult{Changed: changed})
}

func reportError(err error) error {
	var re *inventory.ReportError
	if errors.As(err, &re) {
		status, code := http.StatusBadRequest, CodeInvalidField
		if re.TooLarge {
			status, code = http.StatusRequestEntityTooLarge, CodeTooLarge
		}
		return &APIError{Status: status, Code: code, Field: re.Field, Message: re.Error(), cause: err}
	}
	return err
}

func inventoryNotFound(err error) error {
	var nf *fleet.NotFoundError
	if errors.As(err, &nf) {
		return &APIError{Status: http.StatusNotFound, Code: CodeNotFound, Field: nf.What, Message: nf.Error(), cause: err}
	}
	return err
}

func (s *Server) getMachine(c echo.Context) error {
	id, err := machineParam(c)
	if err != nil {
		return err
	}
	mi, err := s.inv.Machine(id)
	if err != nil {
		return inventoryNotFound(err)
	}
	return c.JSON(http.StatusOK, mi)
}

// knownDigests returns the digests the server knows for plugin id, with
// the version of each: the one the catalog publishes and those its
// channels serve or served (ui_fleet_known.go); and the catalog's version
// and digest.
func (s *Server) knownDigests(ctx context.Context, id string) (map[string]string, string, string) {
	known := map[string]string{}
	if err := s.servedDigests(id, known); err != nil {
		s.log.Warn("read the channels' digests", "plugin", id, "err", err)
	}
	if s.deps.Catalog == nil {
		return known, "", ""
	}
	pid, err := plugin.ParseID(id)
	if err != nil {
		return known, "", ""
	}
	d, err := s.deps.Catalog.Plugin(ctx, pid)
	if err != nil {
		return known, "", ""
	}
	if d.Digest != "" {
		known[d.Digest] = d.Version
	}
	return known, d.Version, d.Digest
}

func (s *Server) pluginInventory(ctx context.Context, c fleet.Counts) (PluginInventory, map[string]string) {
	known, version, digest := s.knownDigests(ctx, c.Plugin)
	pi := PluginInventory{Counts: c, CatalogVersion: version, CatalogDigest: digest}
	for d, n := range c.Digests {
		if _, ok := known[d]; d != "" && !ok {
			pi.UnknownDigests += n
		}
	}
	return pi, known
}

// pluginCursor reads the cursor of the inventory's plugin pages: a plugin
// id this server returned as next.
func pluginCursor(c echo.Context) (string, error) {
	after := c.QueryParam("cursor")
	if after == "" {
		return "", nil
	}
	if id, err := plugin.ParseID(after); err != nil || id.String() != after {
		return "", badField("cursor", "cursor %q is not one this server returned; start again without it", trimForMessage(after))
	}
	return after, nil
}

func trimForMessage(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// pluginsPage is one page of the fleet's plugins with what the catalog
// says of each.
// With a group, the counts are of the group's machines and plugins none
// of them has are left out (a page may then hold fewer than limit).
func (s *Server) pluginsPage(ctx context.Context, after string, limit int, group ...string) (PluginInventoryList, error) {
	page, next, err := s.inv.PluginsPage(after, limit)
	if err != nil {
		return PluginInventoryList{}, err
	}
	var g *groupMembers
	if len(group) > 0 && group[0] != "" {
		g = s.groupMembers(group[0])
	}
	out := PluginInventoryList{Plugins: make([]PluginInventory, 0, len(page)), Next: next}
	for _, p := range page {
		if g != nil {
			if p, err = s.groupCounts(ctx, g, p); err != nil {
				return PluginInventoryList{}, err
			}
			if p.Machines == 0 {
				continue
			}
		}
		pi, _ := s.pluginInventory(ctx, p)
		out.Plugins = append(out.Plugins, pi)
	}
	return out, nil
}

func (s *Server) inventoryPlugins(c echo.Context) error {
	limit, err := parseLimit(c)
	if err != nil {
		return err
	}
	after, err := pluginCursor(c)
	if err != nil {
		return err
	}
	group, err := groupParam(c.QueryParam("group"))
	if err != nil {
		return err
	}
	out, err := s.pluginsPage(c.Request().Context(), after, limit, group)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func pluginParam(c echo.Context) (string, error) {
	id := c.Param("name") + "@" + c.Param("marketplace")
	pid, err := plugin.ParseID(id)
	if err != nil || pid.String() != id {
		return "", badField("name", "%q is not a plugin (name@marketplace)", id)
	}
	return id, nil
}

// With a group, the counts and machines are the group's machines' only
// (a page may then hold fewer than limit: follow next).
func (s *Server) pluginMachines(ctx context.Context, id, after string, limit int, group ...string) (PluginMachines, error) {
	counts, err := s.inv.Plugin(id)
	if err != nil {
		return PluginMachines{}, err
	}
	var g *groupMembers
	if len(group) > 0 && group[0] != "" {
		g = s.groupMembers(group[0])
		if counts, err = s.groupCounts(ctx, g, counts); err != nil {
			return PluginMachines{}, err
		}
	}
	pi, known := s.pluginInventory(ctx, counts)
	hs, next, err := s.inv.Holders(id, after, limit)
	if err != nil {
		return PluginMachines{}, err
	}
	out := PluginMachines{Plugin: pi, Machines: make([]PluginHolder, 0, len(hs)), Next: next}
	for _, h := range hs {
		if g != nil {
			in, err := g.has(h.Machine)
			if err != nil {
				return PluginMachines{}, err
			}
			if !in {
				continue
			}
		}
		ph := PluginHolder{Machine: h.Machine, ClientKind: h.ClientKind, LastSeen: h.LastSeen}
		for _, in := range h.Installs {
			_, ok := known[in.Digest]
			ph.Installs = append(ph.Installs, HolderInstall{Version: in.Version, Digest: in.Digest, Scope: in.Scope, Install: in.Install,
				Enabled: in.Enabled, State: in.State, Reason: in.Reason, UnknownDigest: in.Digest != "" && !ok})
		}
		out.Machines = append(out.Machines, ph)
	}
	return out, nil
}

func (s *Server) inventoryPlugin(c echo.Context) error {
	id, err := pluginParam(c)
	if err != nil {
		return err
	}
	limit, err := parseLimit(c)
	if err != nil {
		return err
	}
	after := c.QueryParam("cursor")
	if after != "" && !inventory.ValidMachineID(after) {
		return badField("cursor", "cursor %q is not one this server returned; start again without it", after)
	}
	group, err := groupParam(c.QueryParam("group"))
	if err != nil {
		return err
	}
	out, err := s.pluginMachines(c.Request().Context(), id, after, limit, group)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) staleMachines(c echo.Context) error {
	days, err := parseDaysParam(c.QueryParam("days"))
	if err != nil {
		return err
	}
	limit, err := parseLimit(c)
	if err != nil {
		return err
	}
	after := c.QueryParam("cursor")
	if after != "" && !inventory.ValidMachineID(after) {
		return badField("cursor", "cursor %q is not one this server returned; start again without it", after)
	}
	ms, next, err := s.inv.Stale(s.now().Add(-time.Duration(days)*24*time.Hour), after, limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, StaleMachines{Days: days, Machines: ms, Next: next})
}

// RevocationStatus is GET /v1/revocations/{id}: the revocation and the
// machines that still report what it revokes as active, most recently
// seen first. They converge to none as clients take the new bundle and
// report again.
type RevocationStatus struct {
	Revocation policy.Revocation `json:"revocation"`
	// Active counts every such machine; Machines lists at most
	// maxConvergenceList of them.
	Active   int            `json:"active"`
	Machines []PluginHolder `json:"machines"`
}

const maxConvergenceList = 1000

// convergence finds the machines still reporting rv's plugin version or
// digest as active. It reads the holders of the plugins concerned only.
func (s *Server) convergence(ctx context.Context, rv policy.Revocation) (RevocationStatus, error) {
	out := RevocationStatus{Revocation: rv, Machines: []PluginHolder{}}
	plugins := []string{}
	if rv.Plugin != "" {
		plugins = append(plugins, rv.Plugin)
	} else {
		// The plugins that have the digest, a page of counts at a time.
		after := ""
		for {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			page, next, err := s.inv.PluginsPage(after, maxPageSize)
			if err != nil {
				return out, err
			}
			for _, c := range page {
				if c.Digests[rv.Digest] > 0 {
					plugins = append(plugins, c.Plugin)
				}
			}
			if next == "" {
				break
			}
			after = next
		}
	}
	for _, p := range plugins {
		after := ""
		for {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			page, err := s.pluginMachines(ctx, p, after, maxPageSize)
			if err != nil {
				return out, err
			}
			for _, h := range page.Machines {
				var hit []HolderInstall
				for _, in := range h.Installs {
					if in.State == inventory.StateActive && ((rv.Digest != "" && in.Digest == rv.Digest) || (rv.Digest == "" && in.Version == rv.Version)) {
						hit = append(hit, in)
					}
				}
				if len(hit) > 0 {
					out.Active++
					if len(out.Machines) < maxConvergenceList {
						out.Machines = append(out.Machines, PluginHolder{Machine: h.Machine, ClientKind: h.ClientKind, LastSeen: h.LastSeen, Installs: hit})
					}
				}
			}
			if page.Next == "" {
				break
			}
			after = page.Next
		}
	}
	sort.SliceStable(out.Machines, func(i, j int) bool { return out.Machines[i].LastSeen.After(out.Machines[j].LastSeen) })
	return out, nil
}

func (s *Server) getRevocation(c echo.Context) error {
	id := c.Param("id")
	if !revocations.ValidID(id) {
		return badField("id", "%q is not a revocation id (r- and 16 hex digits; GET /v1/revocations lists them)", id)
	}
	rv, err := s.revocationByID(id)
	if err != nil {
		return err
	}
	st, err := s.convergence(c.Request().Context(), rv)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// InventoryStats returns what this replica's inventory did since New
// (reports, touches, store writes): benchmarks and metrics.
func (s *Server) InventoryStats() fleet.Stats { return s.inv.Stats() }
