package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/server/tokens"
)

// Role is a token's role.
type Role = tokens.Role

// The roles. A token has exactly one.
const (
	RoleAdmin     = tokens.RoleAdmin
	RoleDeveloper = tokens.RoleDeveloper
	RoleCI        = tokens.RoleCI
	RoleAgent     = tokens.RoleAgent
)

// Roles lists every role, in a stable order.
var Roles = tokens.Roles

// ValidRole reports whether r names a role.
func ValidRole(r string) bool { return tokens.ValidRole(r) }

// RouteInfo is one row of the authorization matrix.
type RouteInfo struct {
	Method string
	Path   string // echo form: /v1/plugins/:marketplace/:name
	// Roles allowed to call the route; nil means public (no token needed).
	Roles []Role
}

type route struct {
	RouteInfo
	handler echo.HandlerFunc
}

var (
	all       = []Role{RoleAdmin, RoleDeveloper, RoleCI, RoleAgent}
	adminOnly = []Role{RoleAdmin}
	readers   = []Role{RoleAdmin, RoleDeveloper, RoleCI}
	// fleetReaders read the inventory: who has what is for admins and CI.
	fleetReaders = []Role{RoleAdmin, RoleCI}
)

// routes is the authorization matrix and the router in one table: every
// route, who may call it, and what answers. The auth middleware reads only
// this table.
func (s *Server) routes() []route {
	r := func(method, path string, roles []Role, h echo.HandlerFunc) route {
		return route{RouteInfo{Method: method, Path: path, Roles: roles}, h}
	}
	return []route{
		r(http.MethodGet, "/healthz", nil, s.healthz),
		r(http.MethodGet, "/readyz", nil, s.readyz),
		r(http.MethodGet, "/metrics", adminOnly, s.metricsHandler),

		r(http.MethodGet, "/v1/auth/config", nil, s.authConfig),
		r(http.MethodPost, "/v1/auth/login", nil, s.authLogin),
		r(http.MethodPost, "/v1/auth/logout", all, s.authLogout),
		r(http.MethodGet, "/v1/auth/whoami", all, s.whoami),

		r(http.MethodGet, "/v1/marketplaces", all, s.listMarketplaces),
		r(http.MethodPost, "/v1/marketplaces", adminOnly, s.addMarketplace),
		r(http.MethodPost, "/v1/marketplaces/:name/update", adminOnly, s.updateMarketplace),
		r(http.MethodDelete, "/v1/marketplaces/:name", adminOnly, s.removeMarketplace),

		r(http.MethodGet, "/v1/plugins", all, s.searchPlugins),
		r(http.MethodGet, "/v1/plugins/:marketplace/:name", all, s.getPlugin),
		r(http.MethodPost, "/v1/resolve", all, s.resolve),
		r(http.MethodPost, "/v1/verify", all, s.verify),

		r(http.MethodGet, "/v1/policy", all, s.getPolicy),
		r(http.MethodGet, "/v1/policy/layers/:layer", readers, s.getLayer),
		r(http.MethodPut, "/v1/policy/layers/:layer", adminOnly, s.putLayer),
		r(http.MethodDelete, "/v1/policy/layers/:layer", adminOnly, s.deleteLayer),
		r(http.MethodGet, "/v1/policy/history", adminOnly, s.policyHistory),
		r(http.MethodGet, "/v1/policy/bundle", all, s.policyBundle),
		r(http.MethodGet, "/v1/policy/bundle/key", all, s.bundleKey),

		r(http.MethodPut, "/v1/inventory/machines/:id", all, s.putInventory),
		r(http.MethodGet, "/v1/inventory/machines/:id", fleetReaders, s.getMachine),
		r(http.MethodGet, "/v1/inventory/plugins", fleetReaders, s.inventoryPlugins),
		r(http.MethodGet, "/v1/inventory/plugins/:marketplace/:name", fleetReaders, s.inventoryPlugin),
		r(http.MethodGet, "/v1/inventory/stale", fleetReaders, s.staleMachines),

		r(http.MethodGet, "/v1/revocations", all, s.listRevocations),
		r(http.MethodPost, "/v1/revocations", adminOnly, s.createRevocation),
		r(http.MethodGet, "/v1/revocations/history", adminOnly, s.revocationHistory),
		r(http.MethodGet, "/v1/revocations/:id", fleetReaders, s.getRevocation),
		r(http.MethodDelete, "/v1/revocations/:id", adminOnly, s.deleteRevocation),
		r(http.MethodGet, "/v1/toolpins", adminOnly, s.listToolPins),
		r(http.MethodPost, "/v1/toolpins", adminOnly, s.approveToolPin),
		r(http.MethodGet, "/v1/toolpins/drift", adminOnly, s.toolPinDrift),
		r(http.MethodGet, "/v1/toolpins/definitions", adminOnly, s.toolPinDefinitions),
		r(http.MethodGet, "/v1/toolpins/auto", adminOnly, s.getToolPinAuto),
		r(http.MethodPut, "/v1/toolpins/auto", adminOnly, s.putToolPinAuto),
		r(http.MethodGet, "/v1/approvals", adminOnly, s.listApprovals),
		r(http.MethodGet, "/v1/approvals/pending", adminOnly, s.pendingApprovals),
		r(http.MethodPost, "/v1/approvals/decisions", adminOnly, s.decideApproval),
		r(http.MethodPost, "/v1/approvals/scan", adminOnly, s.scanApprovals),
		r(http.MethodGet, "/v1/approvals/modes", adminOnly, s.getApprovalModes),
		r(http.MethodPut, "/v1/approvals/modes", adminOnly, s.putApprovalMode),
		r(http.MethodPost, "/v1/requests", all, s.createRequest),
		r(http.MethodGet, "/v1/requests/mine", all, s.myRequests),
		r(http.MethodGet, "/v1/requests", adminOnly, s.listRequests),
		r(http.MethodPost, "/v1/requests/:id/approve", adminOnly, s.approveRequest),
		r(http.MethodPost, "/v1/requests/:id/deny", adminOnly, s.denyRequest),

		r(http.MethodGet, "/v1/channels", all, s.listChannels),
		r(http.MethodPost, "/v1/channels", adminOnly, s.createChannel),
		r(http.MethodGet, "/v1/channels/:name", all, s.forChannel(s.getChannel)),
		r(http.MethodPut, "/v1/channels/:name", adminOnly, s.editChannel),
		r(http.MethodDelete, "/v1/channels/:name", adminOnly, s.deleteChannel),
		r(http.MethodGet, "/v1/channels/:name/history", readers, s.forChannel(s.channelHistory)),
		r(http.MethodGet, "/v1/channels/:name/claude-managed-settings", all, s.forChannel(s.channelSettings)),
		r(http.MethodGet, "/v1/channels/:name/copilot-managed-settings", all, s.forChannel(s.channelAgentSettings("copilot"))),
		r(http.MethodGet, "/v1/channels/:name/codex-managed-settings", all, s.forChannel(s.channelAgentSettings("codex"))),
		r(http.MethodGet, "/v1/channels/:name/gemini-managed-settings", all, s.forChannel(s.channelAgentSettings("gemini"))),
		r(http.MethodGet, "/v1/channels/:name/opencode-managed-settings", all, s.forChannel(s.channelAgentSettings("opencode"))),

		r(http.MethodGet, "/v1/audit", adminOnly, s.audit),

		// The MCP registry API v0.1 (docs/mcp.md): public, as Copilot and
		// VS Code read it without credentials.
		r(http.MethodGet, "/v0.1/servers", nil, s.registryList),
		r(http.MethodGet, "/v0.1/servers/:serverName/versions", nil, s.registryVersions),
		r(http.MethodGet, "/v0.1/servers/:serverName/versions/:version", nil, s.registryGet),
		r(http.MethodGet, "/v1/mcp-registry", adminOnly, s.listRegistryAdded),
		r(http.MethodPost, "/v1/mcp-registry", adminOnly, s.addRegistryServer),
		r(http.MethodDelete, "/v1/mcp-registry/:serverName/versions/:version", adminOnly, s.deleteRegistryServer),

		r(http.MethodGet, "/v1/tokens", adminOnly, s.listTokens),
		r(http.MethodPost, "/v1/tokens", adminOnly, s.createToken),
		r(http.MethodDelete, "/v1/tokens/:id", adminOnly, s.deleteToken),
	}
}

// Routes returns the authorization matrix: every route and the roles that
// may call it.
func (s *Server) Routes() []RouteInfo {
	rs := s.routes()
	out := make([]RouteInfo, len(rs))
	for i, r := range rs {
		out[i] = r.RouteInfo
	}
	return out
}

func roleAllowed(roles []Role, r Role) bool {
	for _, x := range roles {
		if x == r {
			return true
		}
	}
	return false
}
