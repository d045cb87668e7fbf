package policy

import (
	"context"
	"errors"
	"strings"

	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// The methods below are the hook points the rest of wharf calls. Each builds a
// Request, decides, and returns nil or a *plugin.Error of layer policy (type
// policy-denied, with a *Denial inside). They are safe for concurrent use.

// Check decides req and returns its error form: nil when allowed.
func (e *Engine) Check(ctx context.Context, req Request) error {
	d, err := e.Decide(ctx, req)
	if err != nil {
		return err
	}
	return d.Err(req)
}

// AllowAdd gates `wharf marketplace add` before any network or disk access.
func (e *Engine) AllowAdd(ctx context.Context, name string, src plugin.MarketplaceSource) error {
	return e.Check(ctx, Request{Action: ActionAddMarketplace, Marketplace: Marketplace{Name: name, Source: &src}})
}

// AllowUpdate gates a marketplace update (a fetch from its source).
func (e *Engine) AllowUpdate(ctx context.Context, name string, src plugin.MarketplaceSource) error {
	return e.Check(ctx, Request{Action: ActionUpdateMarketplace, Marketplace: Marketplace{Name: name, Source: &src}})
}

// InstallItem is one plugin of an install closure.
type InstallItem struct {
	Plugin plugin.ID
	// Source of the plugin's marketplace; nil when unknown (then
	// strictKnownMarketplaces refuses it).
	Source *plugin.MarketplaceSource
	// RequiredBy is the dependent that pulled this plugin in; zero for the root.
	RequiredBy plugin.ID
	// DeclaredCross is the dependent marketplace's
	// allowCrossMarketplaceDependenciesOn (marketplace.json).
	DeclaredCross []string
	// Signatures are the key ids whose signatures verified.
	Signatures []string
	// Content is the fetched tree's capability set and findings; nil
	// before the fetch.
	Content *Content
}

// AllowInstall checks every plugin of an install closure (dependencies
// included) and returns all denials joined, or nil.
func (e *Engine) AllowInstall(ctx context.Context, closure []InstallItem) error {
	var errs []error
	for _, it := range closure {
		req := Request{Action: ActionInstall, Plugin: it.Plugin, Marketplace: Marketplace{Name: it.Plugin.Source, Source: it.Source},
			RequiredBy: it.RequiredBy, DeclaredCross: it.DeclaredCross, Signatures: it.Signatures, Content: it.Content}
		if err := e.Check(ctx, req); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// AllowCross reports whether managed policy permits plugin from to depend on
// plugin to from another marketplace: every layer that sets
// allowCrossMarketplaceDependenciesOn must list to's marketplace. It answers
// for policy only; that the dependent's marketplace (or the user's settings)
// declares the other marketplace is the caller's check, or use
// AllowCrossDeclared to have both decided here. Same-marketplace
// dependencies are always allowed.
func (e *Engine) AllowCross(from, to plugin.ID) error {
	return e.AllowCrossDeclared(context.Background(), from, to, []string{to.Source})
}

// AllowCrossDeclared decides a cross-marketplace dependency with the intent
// side given: declared is the dependent marketplace's
// allowCrossMarketplaceDependenciesOn (marketplace.json) together with the
// user's and project's settings list.
func (e *Engine) AllowCrossDeclared(ctx context.Context, from, to plugin.ID, declared []string) error {
	return e.Check(ctx, Request{Action: ActionCrossDependency, Plugin: to, RequiredBy: from, DeclaredCross: declared})
}

// AllowEnable gates `wharf enable`.
func (e *Engine) AllowEnable(ctx context.Context, id plugin.ID, src *plugin.MarketplaceSource) error {
	return e.Check(ctx, Request{Action: ActionEnable, Plugin: id, Marketplace: Marketplace{Name: id.Source, Source: src}})
}

// AllowDisable gates `wharf disable` (refused for a plugin forced on).
func (e *Engine) AllowDisable(ctx context.Context, id plugin.ID) error {
	return e.Check(ctx, Request{Action: ActionDisable, Plugin: id})
}

// AllowUninstall gates `wharf uninstall` (refused for a plugin forced on).
func (e *Engine) AllowUninstall(ctx context.Context, id plugin.ID) error {
	return e.Check(ctx, Request{Action: ActionUninstall, Plugin: id})
}

// AllowLoad gates loading an installed plugin at agent start.
func (e *Engine) AllowLoad(ctx context.Context, id plugin.ID, src *plugin.MarketplaceSource) error {
	return e.Check(ctx, Request{Action: ActionLoad, Plugin: id, Marketplace: Marketplace{Name: id.Source, Source: src}})
}

// AllowComponent gates loading one surface (commands, skills, agents, hooks,
// mcp-servers, ...) from a source kind (plugin, managed, user, project,
// builtin). id is the plugin for from == "plugin", else zero.
func (e *Engine) AllowComponent(ctx context.Context, surface settings.Surface, from string, id plugin.ID) error {
	return e.Check(ctx, Request{Action: ActionLoadComponent, Surface: surface, From: from, Plugin: id})
}

// AllowHook gates running a hook from a source kind; id is the plugin for
// plugin hooks.
func (e *Engine) AllowHook(ctx context.Context, from string, id plugin.ID) error {
	return e.Check(ctx, Request{Action: ActionRunHook, Surface: settings.SurfaceHooks, From: from, Plugin: id})
}

// AllowSideload gates --plugin-dir (disableSideloadFlags).
func (e *Engine) AllowSideload(ctx context.Context, dir string) error {
	return e.Check(ctx, Request{Action: ActionSideload, Path: dir})
}

// Forced reports the managed enabledPlugins state of id: "on", "off" or "".
func (e *Engine) Forced(ctx context.Context, id plugin.ID) (string, error) {
	d, err := e.Decide(ctx, Request{Action: ActionDisable, Plugin: id})
	if err != nil {
		return "", err
	}
	return d.Forced, nil
}

// AllowFetch decides whether the tree of plugin (an id such as
// "deploy@corp") may come from src: the source its marketplace entry
// names, or one a fetch of it is redirected to. Managed blockedMarketplaces
// applies to it as to a marketplace, so an allowed marketplace cannot
// deliver a plugin from a blocked repository. npm sources name no
// repository and are not decided here.
func (e *Engine) AllowFetch(ctx context.Context, id string, src plugin.Source) error {
	req, ok := FetchSourceRequest(id, src)
	if !ok {
		return nil
	}
	return e.Check(ctx, req)
}

// FetchSourceRequest is the fetch_source request AllowFetch decides for
// plugin id and source src; ok is false for a source that names no
// repository (relative to its marketplace, npm), which is not decided.
// The engine's memo answers it as any request.
func FetchSourceRequest(id string, src plugin.Source) (req Request, ok bool) {
	s, ok := fetchSource(src)
	if !ok {
		return Request{}, false
	}
	req = Request{Action: ActionFetchSource, Marketplace: Marketplace{Source: &s}}
	if pid, err := plugin.ParseID(id); err == nil {
		req.Plugin, req.Marketplace.Name = pid, pid.Source
	}
	return req, true
}

// fetchSource is the marketplace-source form of a plugin source, which
// blockedMarketplaces entries are compared with: github as github, a git
// URL (url, git-subdir) as git, an archive as url.
func fetchSource(src plugin.Source) (plugin.MarketplaceSource, bool) {
	switch src.Kind {
	case plugin.SourceGitHub:
		return plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: src.Repo, Ref: src.Ref}, true
	case plugin.SourceURL, plugin.SourceGitSubdir:
		raw := src.URL
		if raw == "" {
			raw = src.Repo
		}
		if raw != "" && !strings.Contains(raw, ":") {
			// owner/repo shorthand: a repository on the GitHub host.
			return plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: raw, Ref: src.Ref}, true
		}
		return plugin.MarketplaceSource{Kind: plugin.MktGit, URL: raw, Ref: src.Ref}, raw != ""
	case plugin.SourceArchive:
		return plugin.MarketplaceSource{Kind: plugin.MktURL, URL: src.URL}, src.URL != ""
	}
	return plugin.MarketplaceSource{}, false
}

// withSideloadSource gives a sideload request its directory as the source
// policy compares (blockedMarketplaces directory and pathPattern entries),
// and the plugin's marketplace as the request's marketplace name.
func (r Request) withSideloadSource() Request {
	if r.Action != ActionSideload || r.Path == "" || r.Marketplace.Source != nil {
		return r
	}
	r.Marketplace.Source = &plugin.MarketplaceSource{Kind: plugin.MktDirectory, Path: r.Path}
	if r.Marketplace.Name == "" && !r.Plugin.IsZero() {
		r.Marketplace.Name = r.Plugin.Source
	}
	return r
}
