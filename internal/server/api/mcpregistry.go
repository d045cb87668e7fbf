package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/capability"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/channel"
	"github.com/wharfhq/wharf/internal/server/mcpregistry"
)

// The MCP registry (API v0.1, docs/mcp.md): the MCP servers of the
// plugins the approved channel serves, and those an administrator adds
// under /v1/mcp-registry, less every server the policy's MCP server lists
// deny. The registry's read routes are public, as the registry API
// defines them and as Copilot reads them (without credentials).

// Audit actions of the registry's admin routes.
const (
	ActionMCPRegistryAdd    = "mcp-registry.add"
	ActionMCPRegistryDelete = "mcp-registry.delete"
)

// Keys of a registry response's _meta.
const (
	metaOfficial = "io.modelcontextprotocol.registry/official"
	metaPlugin   = "io.wharf/plugin"
)

// RegistryServerResponse is the registry's ServerResponse.
type RegistryServerResponse struct {
	Server mcpregistry.Server `json:"server"`
	Meta   map[string]any     `json:"_meta"`
}

// RegistryServerList is the registry's ServerList.
type RegistryServerList struct {
	Servers  []RegistryServerResponse `json:"servers"`
	Metadata RegistryListMetadata     `json:"metadata"`
}

// RegistryListMetadata is a ServerList's metadata.
type RegistryListMetadata struct {
	NextCursor string `json:"nextCursor,omitempty"`
	Count      int    `json:"count"`
}

// MCPRegistryAdded is GET /v1/mcp-registry: the servers an administrator
// added, whether the policy lets the registry list them or not.
type MCPRegistryAdded struct {
	Servers []MCPRegistryRecord `json:"servers"`
}

// MCPRegistryRecord is one added server version.
type MCPRegistryRecord struct {
	Server mcpregistry.Server `json:"server"`
	By     string             `json:"by"`
	Added  time.Time          `json:"added"`
	// Listed is whether the registry lists it under the current policy.
	Listed bool `json:"listed"`
}

// pluginServers caches the servers of one build of the approved channel:
// reading them takes the channel's tree.
type pluginServers struct {
	mu      sync.Mutex
	commit  string
	entries []registryCandidate

	// The MCP server lists of one policy version.
	listsMu      sync.Mutex
	listsVersion string
	lists        mcpregistry.Lists
}

func (s *Server) registryCache() *pluginServers { return &s.mcpReg }

type registryCandidate struct {
	entry mcpregistry.Entry
	id    mcpregistry.Identity
}

func registryError(c echo.Context, status int, field, msg string) error {
	body := map[string]string{"error": msg}
	if field != "" {
		body["field"] = field
	}
	return c.JSON(status, body)
}

func (s *Server) registryFail(c echo.Context, err error) error {
	var fe *mcpregistry.FieldError
	if errors.As(err, &fe) {
		return registryError(c, http.StatusBadRequest, fe.Field, fe.Error())
	}
	s.log.Error("mcp registry", "err", err)
	return registryError(c, http.StatusInternalServerError, "", "the registry could not be read; the server log says why")
}

// mcpLists is the current policy's MCP server lists, as the Copilot
// export merges them (allowlists intersect, denylists unite, an
// unreadable list allows nothing).
func (s *Server) mcpLists() (mcpregistry.Lists, error) {
	head, layers, err := s.pol.Current()
	if err != nil {
		return mcpregistry.Lists{}, err
	}
	rc := s.registryCache()
	rc.listsMu.Lock()
	defer rc.listsMu.Unlock()
	if head.Version != "" && rc.listsVersion == head.Version {
		return rc.lists, nil
	}
	pl := make([]policy.Layer, len(layers))
	for i, l := range layers {
		pl[i] = policy.Layer{Name: l.Name, Settings: l.Settings, Modules: l.Modules, Origin: "server layer " + l.Name}
	}
	eng, err := policy.NewEngine(pl)
	if err != nil {
		return mcpregistry.Lists{}, err
	}
	raw, err := eng.ExportCopilot().JSON()
	if err != nil {
		return mcpregistry.Lists{}, err
	}
	var doc struct {
		Allowed []json.RawMessage `json:"allowedMcpServers"`
		Denied  []json.RawMessage `json:"deniedMcpServers"`
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return mcpregistry.Lists{}, err
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return mcpregistry.Lists{}, err
	}
	if _, ok := probe["allowedMcpServers"]; ok && doc.Allowed == nil {
		doc.Allowed = []json.RawMessage{}
	}
	rc.listsVersion, rc.lists = head.Version, mcpregistry.Lists{Allowed: doc.Allowed, Denied: doc.Denied}
	return rc.lists, nil
}

// registryEntries is what the registry lists now.
func (s *Server) registryEntries(ctx context.Context, req *http.Request) ([]mcpregistry.Entry, error) {
	lists, err := s.mcpLists()
	if err != nil {
		return nil, err
	}
	cands, err := s.pluginRegistryServers(ctx, req)
	if err != nil {
		return nil, err
	}
	var recs []mcpregistry.Record
	if err := s.deps.Store.View(func(r store.Reader) (err error) { recs, err = mcpregistry.All(r); return err }); err != nil {
		return nil, err
	}
	for _, rec := range recs {
		cands = append(cands, registryCandidate{
			entry: mcpregistry.Entry{Server: rec.Server, Published: rec.Added, Updated: rec.Added, By: rec.By},
			id:    addedIdentity(rec.Server),
		})
	}
	var out []mcpregistry.Entry
	for _, c := range cands {
		if lists.Permits(c.id) {
			out = append(out, c.entry)
		}
	}
	mcpregistry.Finish(out)
	return out, nil
}

func addedIdentity(sv mcpregistry.Server) mcpregistry.Identity {
	id := mcpregistry.Identity{Names: []string{sv.Name}}
	for _, r := range sv.Remotes {
		id.URLs = append(id.URLs, r.URL)
	}
	for _, p := range sv.Packages {
		if p.Transport.URL != "" {
			id.URLs = append(id.URLs, p.Transport.URL)
		}
	}
	return id
}

// pluginRegistryServers reads the MCP servers of every plugin the
// approved channel serves (its current build; nil without channels).
func (s *Server) pluginRegistryServers(ctx context.Context, req *http.Request) ([]registryCandidate, error) {
	if s.chans == nil {
		return nil, nil
	}
	def, h, err := s.ensureChannel(ctx, channel.Approved)
	if errors.Is(err, channel.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ps := s.registryCache()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	// The repository URL is the one this request reaches the channel by
	// (as for the channel's managed settings); the cache holds none, so
	// one request's Host never shows in another's answer.
	withRepo := func(cs []registryCandidate) []registryCandidate {
		out := make([]registryCandidate, len(cs))
		cloneURL := s.cloneURL(req, def.Name)
		for i, c := range cs {
			if c.entry.Plugin != nil {
				c.entry.Server.Repository = &mcpregistry.Repository{URL: cloneURL, Source: "wharf", Subfolder: "plugins/" + strings.TrimSuffix(c.entry.Plugin.Plugin, "@"+def.Name)}
				if c.entry.Server.Validate() != nil {
					c.entry.Server.Repository = nil
				}
			}
			out[i] = c
		}
		return out
	}
	if ps.commit == h.Commit && h.Commit != "" {
		return withRepo(ps.entries), nil
	}
	st, err := s.chans.Storer(def.Name)
	if err != nil {
		return nil, err
	}
	commit, err := object.GetCommit(st, plumbing.NewHash(h.Commit))
	if err != nil {
		return nil, fmt.Errorf("channel %s: read commit %s: %w", def.Name, h.Commit, err)
	}
	root, err := commit.Tree()
	if err != nil {
		return nil, err
	}
	var out []registryCandidate
	for _, e := range h.Plan.Entries {
		servers, err := treeMCPServers(root, "plugins/"+e.Name)
		if err != nil {
			s.log.Warn("mcp registry: a plugin's servers cannot be read; the registry leaves them out", "plugin", e.Origin, "err", err)
			continue
		}
		info := mcpregistry.PluginInfo{Channel: def.Name, Name: e.Name, Origin: e.Origin, Version: e.Version,
			Description: e.Description, Digest: e.Digest, Built: h.Built}
		for _, sv := range servers {
			en, err := mcpregistry.FromPlugin(info, sv)
			if err != nil {
				s.log.Warn("mcp registry: a plugin server has no registry name; the registry leaves it out", "plugin", e.Origin, "server", sv.Name, "err", err)
				continue
			}
			id := mcpregistry.Identity{Names: []string{sv.Name, en.Server.Name}}
			if sv.Command != "" {
				id.Command = append([]string{sv.Command}, sv.Args...)
			}
			if sv.URL != "" {
				id.URLs = []string{sv.URL}
			}
			out = append(out, registryCandidate{entry: en, id: id})
		}
	}
	ps.commit, ps.entries = h.Commit, out
	return withRepo(out), nil
}

// treeMCPServers writes the plugin under dir of a channel tree to a
// temporary directory and reads its MCP servers as the capability
// extractor does (plugin.json mcpServers, .mcp.json).
func treeMCPServers(root *object.Tree, dir string) ([]capability.Server, error) {
	sub, err := root.Tree(dir)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "wharf-mcpreg-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	err = sub.Files().ForEach(func(f *object.File) error {
		if f.Mode == filemode.Symlink || f.Mode == filemode.Submodule {
			return nil
		}
		p := filepath.Join(tmp, filepath.FromSlash(f.Name))
		if !strings.HasPrefix(p, tmp+string(filepath.Separator)) {
			return fmt.Errorf("path %q leaves the plugin", f.Name)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		r, err := f.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		w, err := os.Create(p)
		if err != nil {
			return err
		}
		if _, err := io.Copy(w, r); err != nil {
			w.Close()
			return err
		}
		return w.Close()
	})
	if err != nil {
		return nil, err
	}
	rep, err := capability.Read(tmp, nil)
	if err != nil {
		return nil, err
	}
	var out []capability.Server
	for _, sv := range rep.Capabilities.MCPServers {
		out = append(out, sv)
	}
	return out, nil
}

func registryResponse(e mcpregistry.Entry) RegistryServerResponse {
	official := map[string]any{"status": "active", "publishedAt": e.Published.UTC(), "updatedAt": e.Updated.UTC(), "isLatest": e.IsLatest}
	meta := map[string]any{metaOfficial: official}
	if e.Plugin != nil {
		meta[metaPlugin] = e.Plugin
	}
	return RegistryServerResponse{Server: e.Server, Meta: meta}
}

// serverNameParam reads the URL-encoded serverName of a registry path
// (com.example%2Fserver).
func serverNameParam(c echo.Context) (string, error) {
	name, err := url.PathUnescape(c.Param("serverName"))
	if err != nil {
		return "", &mcpregistry.FieldError{Field: "serverName", Msg: "not URL-encoded: " + err.Error()}
	}
	if err := mcpregistry.ValidName(name); err != nil {
		return "", &mcpregistry.FieldError{Field: "serverName", Msg: err.(*mcpregistry.FieldError).Msg}
	}
	return name, nil
}

func versionParam(c echo.Context) (string, error) {
	v, err := url.PathUnescape(c.Param("version"))
	if err != nil {
		return "", &mcpregistry.FieldError{Field: "version", Msg: "not URL-encoded: " + err.Error()}
	}
	if v == "latest" {
		return v, nil
	}
	return v, mcpregistry.ValidVersion(v)
}

func boolQuery(c echo.Context, name string) error {
	if v := c.QueryParam(name); v != "" {
		if _, err := strconv.ParseBool(v); err != nil {
			return &mcpregistry.FieldError{Field: name, Msg: fmt.Sprintf("%q is not true or false", v)}
		}
	}
	return nil
}

// registryList is GET /v0.1/servers.
func (s *Server) registryList(c echo.Context) error {
	q := mcpregistry.Query{Cursor: c.QueryParam("cursor"), Search: c.QueryParam("search"), Version: c.QueryParam("version")}
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > mcpregistry.MaxLimit {
			return registryError(c, http.StatusBadRequest, "limit", fmt.Sprintf("limit: %q is not a number between 1 and %d", clipParam(v), mcpregistry.MaxLimit))
		}
		q.Limit = n
	}
	if v := c.QueryParam("updated_since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return registryError(c, http.StatusBadRequest, "updated_since", fmt.Sprintf("updated_since: %q is not an RFC 3339 time (2025-08-07T13:15:04Z)", clipParam(v)))
		}
		q.UpdatedSince = &t
	}
	if err := boolQuery(c, "include_deleted"); err != nil {
		return s.registryFail(c, err)
	}
	// Check the parameters before reading anything.
	if _, _, err := mcpregistry.List(nil, q); err != nil {
		return s.registryFail(c, err)
	}
	entries, err := s.registryEntries(c.Request().Context(), c.Request())
	if err != nil {
		return s.registryFail(c, err)
	}
	page, next, err := mcpregistry.List(entries, q)
	if err != nil {
		return s.registryFail(c, err)
	}
	out := RegistryServerList{Servers: []RegistryServerResponse{}, Metadata: RegistryListMetadata{NextCursor: next, Count: len(page)}}
	for _, e := range page {
		out.Servers = append(out.Servers, registryResponse(e))
	}
	return c.JSON(http.StatusOK, out)
}

func clipParam(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// registryServer reads what the routes of one server take (serverName,
// with withVersion its version, include_deleted) and the entries to look
// it up in.
func (s *Server) registryServer(c echo.Context, withVersion bool) (name, version string, entries []mcpregistry.Entry, err error) {
	if name, err = serverNameParam(c); err != nil {
		return "", "", nil, err
	}
	if withVersion {
		if version, err = versionParam(c); err != nil {
			return "", "", nil, err
		}
	}
	if err = boolQuery(c, "include_deleted"); err != nil {
		return "", "", nil, err
	}
	entries, err = s.registryEntries(c.Request().Context(), c.Request())
	return name, version, entries, err
}

// registryVersions is GET /v0.1/servers/{serverName}/versions.
func (s *Server) registryVersions(c echo.Context) error {
	name, _, entries, err := s.registryServer(c, false)
	if err != nil {
		return s.registryFail(c, err)
	}
	vs := mcpregistry.Versions(entries, name)
	if len(vs) == 0 {
		return registryError(c, http.StatusNotFound, "serverName", "Server not found: "+name)
	}
	out := RegistryServerList{Servers: []RegistryServerResponse{}, Metadata: RegistryListMetadata{Count: len(vs)}}
	for _, e := range vs {
		out.Servers = append(out.Servers, registryResponse(e))
	}
	return c.JSON(http.StatusOK, out)
}

// registryGet is GET /v0.1/servers/{serverName}/versions/{version}.
func (s *Server) registryGet(c echo.Context) error {
	name, version, entries, err := s.registryServer(c, true)
	if err != nil {
		return s.registryFail(c, err)
	}
	e, ok := mcpregistry.Get(entries, name, version)
	if !ok {
		return registryError(c, http.StatusNotFound, "version", fmt.Sprintf("Server not found: %s version %s", name, version))
	}
	return c.JSON(http.StatusOK, registryResponse(e))
}

// listRegistryAdded is GET /v1/mcp-registry.
func (s *Server) listRegistryAdded(c echo.Context) error {
	lists, err := s.mcpLists()
	if err != nil {
		return err
	}
	var recs []mcpregistry.Record
	if err := s.deps.Store.View(func(r store.Reader) (err error) { recs, err = mcpregistry.All(r); return err }); err != nil {
		return err
	}
	out := MCPRegistryAdded{Servers: []MCPRegistryRecord{}}
	for _, r := range recs {
		out.Servers = append(out.Servers, MCPRegistryRecord{Server: r.Server, By: r.By, Added: r.Added, Listed: lists.Permits(addedIdentity(r.Server))})
	}
	return c.JSON(http.StatusOK, out)
}

func registryAdminErr(err error) error {
	var fe *mcpregistry.FieldError
	var ex *mcpregistry.ExistsError
	var rs *mcpregistry.ReservedError
	var full mcpregistry.FullError
	switch {
	case errors.As(err, &fe):
		return badField(fe.Field, "%s", fe.Msg)
	case errors.As(err, &ex):
		return &APIError{Status: http.StatusConflict, Code: CodeConflict, Field: "version", Message: ex.Error()}
	case errors.As(err, &rs):
		return badField("name", "%s", rs.Error())
	case errors.As(err, &full):
		return &APIError{Status: http.StatusConflict, Code: CodeConflict, Message: full.Error()}
	case errors.Is(err, mcpregistry.ErrNotFound):
		return apiErr(http.StatusNotFound, CodeNotFound, "version", "%s; GET /v1/mcp-registry lists the added servers", err.Error())
	}
	return err
}

// addRegistryServer is POST /v1/mcp-registry: the body is a server.json.
func (s *Server) addRegistryServer(c echo.Context) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	if ct := c.Request().Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return apiErr(http.StatusUnsupportedMediaType, CodeUnsupportedMedia, "Content-Type", "Content-Type %q is not JSON; send application/json", ct)
	}
	sv, err := mcpregistry.Parse(body)
	if err != nil {
		return registryAdminErr(err)
	}
	p := s.caller(c)
	rec := mcpregistry.Record{Server: sv, By: p.TokenID, Added: s.now().UTC()}
	err = s.deps.Store.Update(func(tx store.Tx) error {
		if err := mcpregistry.Add(tx, rec); err != nil {
			return err
		}
		return audit.Append(tx, AuditEntry{Time: rec.Added, Action: ActionMCPRegistryAdd, Actor: p.TokenID, Role: p.Role,
			Object: "mcp server " + sv.Name + " " + sv.Version})
	})
	if err != nil {
		return registryAdminErr(err)
	}
	lists, err := s.mcpLists()
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, MCPRegistryRecord{Server: rec.Server, By: rec.By, Added: rec.Added, Listed: lists.Permits(addedIdentity(rec.Server))})
}

// deleteRegistryServer is DELETE /v1/mcp-registry/{serverName}/versions/{version}.
func (s *Server) deleteRegistryServer(c echo.Context) error {
	name, err := serverNameParam(c)
	if err != nil {
		return registryAdminErr(err)
	}
	version, err := versionParam(c)
	if err == nil && version == "latest" {
		err = &mcpregistry.FieldError{Field: "version", Msg: `"latest" names no version; give the exact one to delete`}
	}
	if err != nil {
		return registryAdminErr(err)
	}
	p := s.caller(c)
	err = s.deps.Store.Update(func(tx store.Tx) error {
		if _, err := mcpregistry.Delete(tx, name, version); err != nil {
			return err
		}
		return audit.Append(tx, AuditEntry{Time: s.now().UTC(), Action: ActionMCPRegistryDelete, Actor: p.TokenID, Role: p.Role,
			Object: "mcp server " + name + " " + version})
	})
	if err != nil {
		return registryAdminErr(err)
	}
	return c.NoContent(http.StatusNoContent)
}
