package channel

import (
	"encoding/json"
	"fmt"

	"github.com/wharfhq/wharf/plugin"
)

// MarketplaceJSON renders a channel's .claude-plugin/marketplace.json: a
// pure function of the definition's name and description and the entries.
// Each entry keeps the origin's fields, with its name in the channel, a
// relative source under plugins/ and dependencies named as in the channel.
// It holds only fields Claude Code knows, so its validator finds nothing
// to warn about; the pins and wharf's record of where each plugin came
// from are in the pins file (PinsJSON).
func MarketplaceJSON(d Definition, entries []Entry) ([]byte, error) {
	plugins := make([]map[string]any, 0, len(entries))
	for i := range entries {
		e := &entries[i]
		m := map[string]any{}
		if e.hit.Entry != nil {
			raw, err := json.Marshal(e.hit.Entry)
			if err != nil {
				return nil, fmt.Errorf("channel %s: entry %s: %w", d.Name, e.Origin, err)
			}
			if err := json.Unmarshal(raw, &m); err != nil {
				return nil, err
			}
		}
		delete(m, "signatures") // they sign the origin's name and content
		m["name"] = e.Name
		m["source"] = "./plugins/" + e.Name
		if len(e.Dependencies) > 0 {
			m["dependencies"] = e.Dependencies
		} else {
			delete(m, "dependencies")
		}
		if _, ok := m["version"]; !ok && e.Version != "" && e.Version != "unknown" {
			m["version"] = e.Version
		}
		// wharf's own keys stay out; the pins file carries them.
		delete(m, "integrity")
		delete(m, "wharf")
		plugins = append(plugins, m)
	}
	desc := d.Description
	if desc == "" {
		desc = "wharf channel " + d.Name
	}
	doc := struct {
		Name        string            `json:"name"`
		Owner       map[string]string `json:"owner"`
		Description string            `json:"description"`
		Plugins     []map[string]any  `json:"plugins"`
	}{d.Name, map[string]string{"name": "wharf"}, desc, plugins}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// PinsJSON renders the channel's pins file (.claude-plugin/wharf.json,
// plugin.PinsFileName): each entry's digest in the channel, which wharf
// clients install against, and where it came from. An entry whose name
// Claude Code's validator refuses says so.
func PinsJSON(d Definition, entries []Entry) ([]byte, error) {
	pins := plugin.Pins{Channel: d.Name, Plugins: map[string]plugin.Pin{}}
	for _, e := range entries {
		pins.Plugins[e.Name] = plugin.Pin{Integrity: e.Digest, Origin: e.Origin, Source: e.Source, Commit: e.Commit,
			OriginDigest: e.OriginDigest, ClaudeName: e.ClaudeName}
	}
	b, err := json.MarshalIndent(pins, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ManagedSettings is a Claude Code managed-settings.json that allows only
// one channel as a marketplace.
type ManagedSettings struct {
	StrictKnownMarketplaces []plugin.MarketplaceSource  `json:"strictKnownMarketplaces"`
	ExtraKnownMarketplaces  map[string]KnownMarketplace `json:"extraKnownMarketplaces"`
	EnabledPlugins          map[string]bool             `json:"enabledPlugins,omitempty"`
}

// KnownMarketplace is an extraKnownMarketplaces value.
type KnownMarketplace struct {
	Source     plugin.MarketplaceSource `json:"source"`
	AutoUpdate bool                     `json:"autoUpdate"`
}

// Settings returns the managed settings of a channel served at cloneURL
// (without credentials). Claude Code compares git marketplace URLs after
// dropping the user and password of http(s) URLs, so the one allowlist
// entry matches the URL a developer adds with a token in it
// (http://wharf:<token>@host/git/<name>.git) as well as without.
// Plugins the policy forces on are listed under their channel names; a
// plugin the channel leaves out because the policy denies it (forced off
// or refused by a rule), a revocation withdraws it or a dependency it needs
// is left out, is listed as off under the name it has in the channel's
// marketplace (its own, unless an entry took it), so that a copy a client
// installed before stays disabled.
func Settings(name, cloneURL string, entries []Entry, leftOut []LeftOut) ManagedSettings {
	src := plugin.MarketplaceSource{Kind: plugin.MktGit, URL: cloneURL}
	ms := ManagedSettings{
		StrictKnownMarketplaces: []plugin.MarketplaceSource{src},
		ExtraKnownMarketplaces:  map[string]KnownMarketplace{name: {Source: src, AutoUpdate: true}},
	}
	for _, e := range entries {
		switch e.Forced {
		case "on":
			ms.set(e.Name+"@"+name, true)
		case "off":
			ms.set(e.Name+"@"+name, false)
		}
	}
	taken := map[string]bool{}
	for _, e := range entries {
		taken[e.Name] = true
	}
	for _, lo := range leftOut {
		switch lo.Kind {
		case LeftDenied, LeftRevoked, LeftDependency:
		default:
			continue
		}
		if id, err := plugin.ParseID(lo.Plugin); err == nil && !taken[id.Name] {
			ms.set(id.Name+"@"+name, false)
		}
	}
	return ms
}

func (ms *ManagedSettings) set(id string, on bool) {
	if ms.EnabledPlugins == nil {
		ms.EnabledPlugins = map[string]bool{}
	}
	ms.EnabledPlugins[id] = on
}
