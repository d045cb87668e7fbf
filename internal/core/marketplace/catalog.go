package marketplace

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/plugin"
)

// Catalog is the plugins of every known marketplace, read once. It is
// immutable after Load and safe for concurrent use.
type Catalog struct {
	markets []Loaded
}

// Loaded is one known marketplace and its parsed marketplace.json (nil if
// it could not be read; Err says why).
type Loaded struct {
	Known       Known
	Marketplace *plugin.Marketplace
	Root        string // where relative plugin sources are resolved
	Err         error
}

// Hit is one plugin entry of the catalog.
type Hit struct {
	ID    plugin.ID
	Entry *plugin.Entry
	Root  string // the marketplace root; "" when it has no local files
	Known Known
}

// Catalog reads the marketplace.json of every known marketplace. One that
// cannot be read does not hide the others: it is kept with its error.
func (m *Manager) Catalog() (*Catalog, error) {
	known, err := m.List()
	if err != nil {
		return nil, err
	}
	return LoadCatalog(known), nil
}

// LoadCatalog reads the marketplace.json of each known marketplace.
func LoadCatalog(known []Known) *Catalog {
	c := &Catalog{}
	for _, k := range known {
		l := Loaded{Known: k}
		file := k.ManifestFile()
		l.Marketplace, l.Err = readManifest(file)
		if k.Source.Kind != plugin.MktURL {
			l.Root = RootOf(file)
		}
		c.markets = append(c.markets, l)
	}
	return c
}

// Marketplaces returns every known marketplace, in name order.
func (c *Catalog) Marketplaces() []Loaded { return c.markets }

// Problems returns the errors of marketplaces that could not be read.
func (c *Catalog) Problems() []error {
	var out []error
	for _, l := range c.markets {
		if l.Err != nil {
			out = append(out, l.Err)
		}
	}
	return out
}

// All returns every plugin entry, ordered by marketplace, then name.
func (c *Catalog) All() []Hit {
	var out []Hit
	for _, l := range c.markets {
		if l.Marketplace == nil {
			continue
		}
		for i := range l.Marketplace.Plugins {
			e := &l.Marketplace.Plugins[i]
			out = append(out, Hit{ID: plugin.ID{Name: e.Name, Source: l.Known.Name}, Entry: e, Root: l.Root, Known: l.Known})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].ID.Source != out[j].ID.Source {
			return out[i].ID.Source < out[j].ID.Source
		}
		return out[i].ID.Name < out[j].ID.Name
	})
	return out
}

// Search returns the entries matching every whitespace-separated word of
// query, case-insensitively, in name, description, keywords, category or
// tags. Name matches rank first. An empty query returns All.
func (c *Catalog) Search(query string) []Hit {
	words := strings.Fields(strings.ToLower(query))
	all := c.All()
	if len(words) == 0 {
		return all
	}
	type scored struct {
		h     Hit
		score int
	}
	var found []scored
	for _, h := range all {
		name := strings.ToLower(h.Entry.Name)
		text := strings.ToLower(strings.Join(append(append([]string{
			h.Entry.Name, h.Entry.DisplayName, h.Entry.Description, h.Entry.Category},
			h.Entry.Keywords...), h.Entry.Tags...), "\x00"))
		score, ok := 0, true
		for _, w := range words {
			switch {
			case name == w:
				score += 3
			case strings.Contains(name, w):
				score += 2
			case strings.Contains(text, w):
				score++
			default:
				ok = false
			}
		}
		if ok {
			found = append(found, scored{h, score})
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].score > found[j].score })
	out := make([]Hit, len(found))
	for i, s := range found {
		out[i] = s.h
	}
	return out
}

// Lookup returns the entry for id.
func (c *Catalog) Lookup(id plugin.ID) (Hit, error) {
	for _, l := range c.markets {
		if l.Known.Name != id.Source {
			continue
		}
		if l.Marketplace == nil {
			return Hit{}, l.Err
		}
		if e := l.Marketplace.Entry(id.Name); e != nil {
			return Hit{ID: id, Entry: e, Root: l.Root, Known: l.Known}, nil
		}
		return Hit{}, &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeNotFound, Object: id.String(),
			Err:  fmt.Errorf("marketplace %q has no plugin %q", id.Source, id.Name),
			Hint: fmt.Sprintf("search for it with: wharf search %s; or refresh the catalog: wharf marketplace update %s", id.Name, id.Source)}
	}
	return Hit{}, &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeNotFound, Object: id.String(),
		Err:  fmt.Errorf("marketplace %q: %w", id.Source, ErrUnknown),
		Hint: "see the known ones with: wharf marketplace list; add it with: wharf marketplace add <source>"}
}

// ResolvedSource is where a plugin's files come from, made concrete: a
// directory on this machine, or a git URL (GitHub shorthand expanded), an
// npm package or an archive URL.
type ResolvedSource struct {
	Kind     plugin.SourceKind `json:"kind"`
	Dir      string            `json:"dir,omitempty"`
	URL      string            `json:"url,omitempty"`
	Path     string            `json:"path,omitempty"`
	Ref      string            `json:"ref,omitempty"`
	SHA      string            `json:"sha,omitempty"`
	Package  string            `json:"package,omitempty"`
	Version  string            `json:"version,omitempty"`
	Registry string            `json:"registry,omitempty"`
	SHA256   string            `json:"sha256,omitempty"`
}

// Resolve makes h's source concrete. getenv supplies WHARF_GITHUB_HOST
// (nil means os.Getenv).
func (h Hit) Resolve(getenv func(string) string) (ResolvedSource, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg := &fetch.Config{GitHubHost: strings.TrimSpace(getenv("WHARF_GITHUB_HOST"))}
	s := h.Entry.Source
	r := ResolvedSource{Kind: s.Kind, Path: s.Path, Ref: s.Ref, SHA: s.SHA, Package: s.Package,
		Version: s.Version, Registry: s.Registry, SHA256: s.SHA256, URL: s.URL}
	switch s.Kind {
	case plugin.SourceRelative:
		if h.Root == "" {
			return ResolvedSource{}, &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeSource, Object: h.ID.String(),
				Err:  fmt.Errorf("plugin source %q is relative, but marketplace %q was added from a URL of its marketplace.json, without its files", s.Path, h.ID.Source),
				Hint: "add the marketplace from its git repository instead"}
		}
		rel := filepath.FromSlash(strings.TrimPrefix(s.Path, "./"))
		dir := filepath.Join(h.Root, rel)
		if r, err := filepath.Rel(h.Root, dir); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return ResolvedSource{}, plugin.Errorf(plugin.LayerMaterialization, plugin.TypeSource, h.ID.String(), "fix the entry's source in the marketplace.json",
				"plugin source %q leaves the marketplace root", s.Path)
		}
		r.Dir, r.Path = dir, ""
	case plugin.SourceGitHub:
		r.URL = RemoteURL(plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: s.Repo}, cfg)
	case plugin.SourceGitSubdir:
		if s.URL == "" && s.Repo != "" {
			r.URL = RemoteURL(plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: s.Repo}, cfg)
		} else if gh, err := plugin.ParseMarketplaceSource(s.URL); err == nil && gh.Kind == plugin.MktGitHub && gh.Repo == s.URL {
			// The owner/repo shorthand, read as `marketplace add` reads it.
			r.URL = RemoteURL(gh, cfg)
		}
	}
	return r, nil
}

// Version is the plugin's version as far as the catalog knows without
// fetching: the plugin.json version of a plugin stored in the marketplace,
// else the entry's version, else for a plugin stored in a git marketplace
// the 12-digit commit of the marketplace (as the installer versions it),
// else "".
func (h Hit) Version() string {
	vs := plugin.VersionSources{Entry: h.Entry.Version}
	if h.Entry.Source.Kind == plugin.SourceRelative {
		// Stored in the marketplace: its plugin.json is at hand, and a
		// versionless one in a git marketplace gets the marketplace's
		// commit, as the installer versions it.
		vs.MarketplaceCommit = h.Known.Commit
		if h.Root != "" && h.Entry.IsStrict() {
			if rs, err := h.Resolve(nil); err == nil {
				if data, err := os.ReadFile(plugin.ManifestFile(rs.Dir)); err == nil {
					if m, _, err := plugin.ParseManifest(data, plugin.ManifestFile(rs.Dir)); err == nil {
						vs.Manifest = m.Version
					}
				}
			}
		}
	}
	return plugin.VersionOf(vs)
}
