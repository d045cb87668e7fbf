package api

import (
	"context"
	"net/http"
	"net/url"
	"sort"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/server/policystate"
	"github.com/wharfhq/wharf/internal/server/revocations"
	"github.com/wharfhq/wharf/internal/server/web"
	"github.com/wharfhq/wharf/plugin"
)

// The console's fleet pages (admin and ci): the inventory by plugin, one
// plugin's machines, one machine, the revocations and each one's
// convergence. They read what the /v1 inventory routes read.

func (u *console) fleetRoutes(e *echo.Echo) {
	fleetRole := u.session(fleetReaders)
	e.GET("/ui/fleet", u.inventoryPage, fleetRole)
	e.GET("/ui/fleet/plugins/:marketplace/:name", u.fleetPluginPage, fleetRole)
	e.GET("/ui/fleet/machines/:id", u.machinePage, fleetRole)
	e.GET("/ui/fleet/revocations", u.revocationsPage, fleetRole)
	e.GET("/ui/fleet/revocations/:id", u.revocationPage, fleetRole)
}

func fleetPluginURL(id string) string {
	pid, err := plugin.ParseID(id)
	if err != nil {
		return ""
	}
	return "/ui/fleet/plugins/" + url.PathEscape(pid.Source) + "/" + url.PathEscape(pid.Name)
}

func machineURL(id string) string { return "/ui/fleet/machines/" + url.PathEscape(id) }

func countRows(m map[string]int, unknown func(string) bool) []web.CountRow {
	out := make([]web.CountRow, 0, len(m))
	for k, n := range m {
		out = append(out, web.CountRow{Value: k, Count: n, Unknown: unknown != nil && unknown(k)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Value < out[j].Value
	})
	return out
}

func fleetRow(pi PluginInventory) web.FleetPluginRow {
	return web.FleetPluginRow{ID: pi.Plugin, URL: fleetPluginURL(pi.Plugin), Machines: pi.Machines, UnknownDigests: pi.UnknownDigests,
		Versions: countRows(pi.Versions, nil), States: countRows(pi.States, nil), Installs: countRows(pi.Installs, nil)}
}

func (u *console) inventoryPage(c echo.Context) error {
	after, err := pluginCursor(c)
	if err != nil {
		return err
	}
	page, err := u.s.pluginsPage(c.Request().Context(), after, defaultPageSize)
	if err != nil {
		return err
	}
	v := web.InventoryView{Layout: u.layout(c, "Fleet", "fleet")}
	for _, pi := range page.Plugins {
		v.Plugins = append(v.Plugins, fleetRow(pi))
	}
	if page.Next != "" {
		v.NextURL = "/ui/fleet?cursor=" + url.QueryEscape(page.Next)
	}
	return u.render(c, http.StatusOK, web.PageInventory, v)
}

func holderRow(h PluginHolder) web.FleetMachineRow {
	r := web.FleetMachineRow{ID: h.Machine, URL: machineURL(h.Machine), LastSeen: h.LastSeen}
	for _, in := range h.Installs {
		r.Installs = append(r.Installs, web.FleetInstall{Version: in.Version, Digest: in.Digest, UnknownDigest: in.UnknownDigest,
			Scope: in.Scope, Install: in.Install, Enabled: in.Enabled, State: in.State, Reason: in.Reason})
	}
	return r
}

func (u *console) fleetPluginPage(c echo.Context) error {
	id, err := pluginParam(c)
	if err != nil {
		return err
	}
	after := c.QueryParam("cursor")
	if after != "" && !inventory.ValidMachineID(after) {
		return badField("cursor", "cursor %q is not one this server returned; start again without it", after)
	}
	pm, err := u.s.pluginMachines(c.Request().Context(), id, after, defaultPageSize)
	if err != nil {
		return err
	}
	known, _, _ := u.s.knownDigests(c.Request().Context(), id)
	unknown := func(d string) bool { _, ok := known[d]; return d != "" && !ok }
	v := web.FleetPluginView{Layout: u.layout(c, id+" in the fleet", "fleet"), Plugin: fleetRow(pm.Plugin),
		CatalogVersion: pm.Plugin.CatalogVersion, CatalogDigest: pm.Plugin.CatalogDigest, Digests: countRows(pm.Plugin.Digests, unknown)}
	if pm.Plugin.CatalogVersion != "" || pm.Plugin.CatalogDigest != "" {
		pid, _ := plugin.ParseID(id)
		v.CatalogURL = pluginURL(pid)
	}
	for _, h := range pm.Machines {
		v.Machines = append(v.Machines, holderRow(h))
	}
	if v.Adoption, err = u.adoptionChart(id); err != nil {
		return err
	}
	if pm.Next != "" {
		v.NextURL = fleetPluginURL(id) + "?cursor=" + url.QueryEscape(pm.Next)
	}
	return u.render(c, http.StatusOK, web.PageFleetPlugin, v)
}

func (u *console) machinePage(c echo.Context) error {
	id, err := machineParam(c)
	if err != nil {
		return err
	}
	mi, err := u.s.inv.Machine(id)
	if err != nil {
		return inventoryNotFound(err)
	}
	r := mi.Report
	v := web.MachineView{Layout: u.layout(c, "Machine "+id, "fleet"), ID: id, Hostname: r.Machine.Hostname, User: r.Machine.User,
		OS: r.Machine.OS, ClientKind: r.Client.Kind, ClientVer: r.Client.Version, Token: mi.Token, Received: mi.Received,
		LastSeen: mi.LastSeen, Indexing: mi.Indexing, PluginCount: len(r.Plugins)}
	for _, p := range r.Plugins {
		v.Plugins = append(v.Plugins, web.FleetInstall{Plugin: p.ID, PluginURL: fleetPluginURL(p.ID), Version: p.Version, Digest: p.Digest,
			Scope: p.Scope, Install: p.Install, Enabled: p.Enabled, State: p.State, Reason: p.Reason})
	}
	return u.render(c, http.StatusOK, web.PageMachine, v)
}

func revocationRow(r policy.Revocation) web.RevocationRow {
	return web.RevocationRow{ID: r.ID, URL: "/ui/fleet/revocations/" + url.PathEscape(r.ID), What: policystate.RevokedObject(r),
		Reason: r.Reason, By: r.By, Created: r.Created}
}

func (u *console) revocationsPage(c echo.Context) error {
	after, err := keyCursor(c)
	if err != nil {
		return err
	}
	page, err := u.s.revocationPage(after, defaultPageSize)
	if err != nil {
		return err
	}
	v := web.RevocationsView{Layout: u.layout(c, "Revocations", "revocations")}
	for _, r := range page.Revocations {
		v.Revocations = append(v.Revocations, revocationRow(r))
	}
	if page.Next != "" {
		v.NextURL = "/ui/fleet/revocations?cursor=" + url.QueryEscape(page.Next)
	}
	return u.render(c, http.StatusOK, web.PageRevocations, v)
}

func (u *console) revocationPage(c echo.Context) error {
	id := c.Param("id")
	if !revocations.ValidID(id) {
		return badField("id", "%q is not a revocation id", id)
	}
	rv, err := u.s.revocationByID(id)
	if err != nil {
		return err
	}
	st, err := u.s.convergence(c.Request().Context(), rv)
	if err != nil {
		return err
	}
	v := web.RevocationView{Layout: u.layout(c, "Revocation "+id, "revocations"), Revocation: revocationRow(rv), Active: st.Active,
		Truncated: st.Active > len(st.Machines)}
	for _, h := range st.Machines {
		v.Machines = append(v.Machines, holderRow(h))
	}
	if v.Convergence, err = u.convergenceChart(rv); err != nil {
		return err
	}
	return u.render(c, http.StatusOK, web.PageRevocation, v)
}

// fleetSummary is the "on N machines, M with an unknown digest" line of a
// plugin's catalog page, for the roles that may read the fleet.
func (u *console) fleetSummary(ctx context.Context, c echo.Context, id plugin.ID) (*web.FleetSummary, error) {
	if p, ok := c.Get(principalKey).(principal); !ok || !roleAllowed(fleetReaders, p.Role) {
		return nil, nil
	}
	counts, err := u.s.inv.Plugin(id.String())
	if err != nil {
		return nil, err
	}
	pi, _ := u.s.pluginInventory(ctx, counts)
	return &web.FleetSummary{Machines: pi.Machines, UnknownDigests: pi.UnknownDigests, URL: fleetPluginURL(id.String())}, nil
}
