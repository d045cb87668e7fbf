package api

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/channel"
	"github.com/wharfhq/wharf/internal/server/web"
	"github.com/wharfhq/wharf/plugin"
)

func (u *console) channelRow(c echo.Context, def channel.Definition, h channel.Head) web.ChannelRow {
	sm := u.s.summary(c.Request(), def, h)
	return web.ChannelRow{Name: sm.Name, Description: sm.Description, URL: sm.URL, Commit: sm.Commit, Plugins: sm.Plugins,
		Updated: sm.Updated, Public: sm.Public, Page: "/ui/channels/" + def.Name}
}

func (u *console) channelsPage(c echo.Context) error {
	if _, _, err := u.s.channels(); err != nil {
		return err
	}
	after, err := keyCursor(c)
	if err != nil {
		return err
	}
	var defs []channel.Definition
	if err := u.s.deps.Store.View(func(r store.Reader) (err error) {
		defs, err = channel.List(r)
		return err
	}); err != nil {
		return err
	}
	defs, next := pageByKey(u.s.visibleChannels(c, defs), func(d channel.Definition) string { return d.Name }, after, defaultPageSize)
	v := web.ChannelsView{Layout: u.layout(c, "Channels", "channels")}
	if next != "" {
		v.NextURL = "/ui/channels?cursor=" + url.QueryEscape(next)
	}
	for _, d := range defs {
		def, h, err := u.s.ensureChannel(c.Request().Context(), d.Name)
		row := u.channelRow(c, def, h)
		if err != nil {
			row = web.ChannelRow{Name: d.Name, Page: "/ui/channels/" + d.Name, URL: u.s.cloneURL(c.Request(), d.Name), Error: toAPIError(u.s.channelErr(err)).Message}
		}
		v.Channels = append(v.Channels, row)
	}
	return u.render(c, http.StatusOK, web.PageChannels, v)
}

func (u *console) channelPage(c echo.Context) error {
	def, h, err := u.s.requestedChannel(c) // forChannel checked the caller sees it
	if err != nil {
		return err
	}
	sm := u.s.summary(c.Request(), def, h)
	v := web.ChannelView{Layout: u.layout(c, "Channel "+def.Name, "channels"), ChannelRow: u.channelRow(c, def, h), Command: sm.Command,
		Scope: scopeOf(def), Changes: h.Changes}
	for _, e := range h.Plan.Entries {
		row := web.ChannelEntryRow{Name: e.Name, Origin: e.Origin, Version: e.Version, Digest: e.Digest, Source: e.Source, Commit: e.Commit,
			Dependencies: e.Dependencies, Dependency: e.Dependency}
		if id, err := plugin.ParseID(e.Origin); err == nil {
			row.OriginURL = pluginURL(id)
		}
		v.Entries = append(v.Entries, row)
	}
	for _, lo := range h.Plan.LeftOut {
		row := web.LeftOutRow{Plugin: lo.Plugin, Kind: lo.Kind, Reason: lo.Reason}
		if id, err := plugin.ParseID(lo.Plugin); err == nil && lo.Kind != channel.LeftNotFound {
			row.PluginURL = pluginURL(id)
		}
		v.LeftOut = append(v.LeftOut, row)
	}
	return u.render(c, http.StatusOK, web.PageChannel, v)
}

func scopeOf(d channel.Definition) string {
	var parts []string
	if len(d.Marketplaces) > 0 {
		parts = append(parts, "the marketplaces "+strings.Join(d.Marketplaces, ", "))
	}
	if len(d.Plugins) > 0 {
		parts = append(parts, "the plugins "+strings.Join(d.Plugins, ", ")+" and their dependencies")
	}
	if len(parts) == 0 {
		return "every known marketplace"
	}
	return strings.Join(parts, ", limited to ")
}
