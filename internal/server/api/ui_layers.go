package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/web"
)

// The layer editor's history, restore and delete; the editor itself is in
// ui.go.

// ActionPolicyRestore marks a layer write that restored a past revision
// (the write itself is audited as policy.layer.put).
const ActionPolicyRestore = "policy.layer.restore"

// maxLayerHistory bounds the revisions a layer page reads and shows.
const maxLayerHistory = 200

func (u *console) layerRoutes(e *echo.Echo) {
	admin := u.session(adminOnly)
	e.POST("/ui/admin/policy/layers/:layer/restore", u.layerRestore, admin)
	e.GET("/ui/admin/policy/layers/:layer/delete", u.layerDeleteForm, admin)
	e.POST("/ui/admin/policy/layers/:layer/delete", u.layerDelete, admin)
}

// rankHelp says what ranks mean, which the layers use now, and the rank
// the server gives a layer written without one (the form's default).
func (u *console) rankHelp() (string, error) {
	layers, err := u.s.pol.Layers()
	if err != nil {
		return "", err
	}
	var now []string
	for _, l := range layers {
		now = append(now, fmt.Sprintf("%s %d", l.Name, l.Rank))
	}
	used := "no layer yet"
	if len(now) > 0 {
		used = "in use: " + strings.Join(now, ", ")
	}
	return fmt.Sprintf("lower rank = higher authority (e.g. org 10, department 20, project 30; %s). A layer saved without a rank gets %d, below the usual tiers.",
		used, defaultLayerRank), nil
}

// layerHistory reads the layer's revisions (the last maxLayerHistory),
// newest first, each with its changes against the one before.
func (u *console) layerHistory(name string, current *Layer) ([]web.LayerRevision, error) {
	var all []HistoryEntry
	var after uint64
	for {
		page, next, err := u.s.pol.History(name, after, maxPageSize)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if len(all) > maxLayerHistory {
			all = all[len(all)-maxLayerHistory:]
		}
		if next == "" {
			break
		}
		n, err := strconv.ParseUint(next, 10, 64)
		if err != nil || n <= after {
			return nil, fmt.Errorf("policy history of %s: cursor %q does not move on", name, next)
		}
		after = n
	}
	out := make([]web.LayerRevision, 0, len(all))
	var prev *Layer
	for _, e := range all {
		r := web.LayerRevision{Seq: e.Seq, Time: e.Time, Action: e.Action, LayerVersion: e.LayerVersion, Actor: e.Actor,
			Changes: layerDiff(prev, e.Document)}
		if e.Document != nil {
			r.Current = current != nil && e.LayerVersion == current.Version && e.Action != "delete"
			r.Restorable = !r.Current
		}
		out = append(out, r)
		prev = e.Document
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// layerDiff is what changed from a to b (nil: no layer): each settings
// key, the rank and each Rego module that was added, removed or changed,
// with the values pretty-printed.
func layerDiff(a, b *Layer) []web.SettingChange {
	var out []web.SettingChange
	keysOf := func(l *Layer) map[string]json.RawMessage {
		m := map[string]json.RawMessage{}
		if l != nil {
			_ = json.Unmarshal(l.Settings, &m)
		}
		return m
	}
	ka, kb := keysOf(a), keysOf(b)
	names := map[string]bool{}
	for k := range ka {
		names[k] = true
	}
	for k := range kb {
		names[k] = true
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		if ch, ok := change(k, pretty(ka[k]), pretty(kb[k])); ok {
			out = append(out, ch)
		}
	}
	rank := func(l *Layer) string {
		if l == nil {
			return ""
		}
		return strconv.Itoa(l.Rank)
	}
	if ch, ok := change("rank", rank(a), rank(b)); ok {
		out = append(out, ch)
	}
	mods := map[string]bool{}
	modOf := func(l *Layer, m string) string {
		if l == nil {
			return ""
		}
		return l.Modules[m]
	}
	for _, l := range []*Layer{a, b} {
		if l != nil {
			for m := range l.Modules {
				mods[m] = true
			}
		}
	}
	msorted := make([]string, 0, len(mods))
	for m := range mods {
		msorted = append(msorted, m)
	}
	sort.Strings(msorted)
	for _, m := range msorted {
		if ch, ok := change("module "+m, modOf(a, m), modOf(b, m)); ok {
			out = append(out, ch)
		}
	}
	return out
}

func change(what, before, after string) (web.SettingChange, bool) {
	switch {
	case before == after:
		return web.SettingChange{}, false
	case before == "":
		return web.SettingChange{What: what, Kind: "added", After: after}, true
	case after == "":
		return web.SettingChange{What: what, Kind: "removed", Before: before}, true
	}
	return web.SettingChange{What: what, Kind: "changed", Before: before, After: after}, true
}

// pretty is raw JSON indented for reading ("" for none).
func pretty(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// layerRestore writes a past revision's document (settings, rank and
// modules) as the layer's next version, through the API's PUT (validated,
// with If-Match, in the history and the audit log), and notes the restore
// in the audit log.
func (u *console) layerRestore(c echo.Context) error {
	name := c.Param("layer")
	if !layerNameRE.MatchString(name) {
		return badField("layer", "layer name %q must be lower-case letters, digits and _, starting with a letter", name)
	}
	seq, err := strconv.ParseUint(c.FormValue("seq"), 10, 64)
	if err != nil {
		return badField("seq", "revision %q is not a history entry number; reload the layer page", c.FormValue("seq"))
	}
	version, err := strconv.ParseUint(c.FormValue("version"), 10, 64)
	if err != nil {
		return badField("version", "version %q is not a layer version; reload the layer page", c.FormValue("version"))
	}
	entries, _, err := u.s.pol.History(name, seq-1, 1)
	if err != nil {
		return err
	}
	if len(entries) == 0 || entries[0].Seq != seq || entries[0].Document == nil {
		return apiErr(http.StatusNotFound, CodeNotFound, "seq", "layer %s has no revision #%d with a document to restore", name, seq)
	}
	doc := entries[0].Document
	rank := doc.Rank
	body, err := json.Marshal(layerBody{Rank: &rank, Settings: doc.Settings, Modules: doc.Modules})
	if err != nil {
		return err
	}
	h := http.Header{"Content-Type": {"application/json"}}
	if version == 0 {
		h.Set("If-None-Match", "*")
	} else {
		h.Set("If-Match", layerETag(version))
	}
	res, err := u.call(c, u.s.putLayer, http.MethodPut, "/v1/policy/layers/"+name, []string{"layer", name}, h, body)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status < 500 {
		v, _, verr := u.layerView(c, name)
		if verr != nil {
			return verr
		}
		if ae.Code == CodeVersionConflict {
			v.Conflict = ae.Message
		} else {
			v.Errors = append(v.Errors, "Restoring revision #"+strconv.FormatUint(seq, 10)+": "+ae.Message)
		}
		return u.render(c, ae.Status, web.PageLayer, v)
	}
	if err != nil {
		return err
	}
	var w LayerWriteResult
	if err := json.Unmarshal(res.body.Bytes(), &w); err != nil {
		return fmt.Errorf("layer write answer: %w", err)
	}
	if err := u.s.appendAudit(c, ActionPolicyRestore, name, map[string]any{"revision": seq, "fromLayerVersion": entries[0].LayerVersion, "layerVersion": w.Layer.Version}); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/admin/policy/layers/"+name+"?restored="+strconv.FormatUint(seq, 10))
}

func (u *console) layerDeleteForm(c echo.Context) error {
	v, l, err := u.layerView(c, c.Param("layer"))
	if err != nil {
		return err
	}
	if l == nil {
		return apiErr(http.StatusNotFound, CodeNotFound, "layer", "no policy layer %s", v.Name)
	}
	return u.render(c, http.StatusOK, web.PageLayerDelete, web.LayerDeleteView{Layout: u.layout(c, "Delete layer "+v.Name, "policy"),
		Name: v.Name, Version: l.Version, Rank: l.Rank, Keys: settingsKeys(l.Settings)})
}

func (u *console) layerDelete(c echo.Context) error {
	name := c.Param("layer")
	if !layerNameRE.MatchString(name) {
		return badField("layer", "layer name %q must be lower-case letters, digits and _, starting with a letter", name)
	}
	version, err := strconv.ParseUint(c.FormValue("version"), 10, 64)
	if err != nil || version == 0 {
		return badField("version", "version %q is not a layer version; reload the layer page", c.FormValue("version"))
	}
	_, err = u.call(c, u.s.deleteLayer, http.MethodDelete, "/v1/policy/layers/"+name, []string{"layer", name},
		http.Header{"If-Match": {layerETag(version)}}, nil)
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/admin/policy?deleted="+name)
}

// appendAudit appends one entry by the caller of c.
func (s *Server) appendAudit(c echo.Context, action, object string, detail map[string]any) error {
	p := s.caller(c)
	return s.deps.Store.Update(func(tx store.Tx) error {
		return audit.Append(tx, AuditEntry{Time: s.now().UTC(), Action: action, Actor: p.TokenID, Role: p.Role, Object: object, Detail: detail})
	})
}
