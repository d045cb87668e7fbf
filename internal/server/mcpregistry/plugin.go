package mcpregistry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/core/capability"
	"github.com/wharfhq/wharf/internal/core/lazyre"
)

// PluginInfo is what the registry says of a plugin a channel serves.
type PluginInfo struct {
	Channel     string // the channel's name
	Name        string // the plugin's name in the channel
	Origin      string // name@marketplace
	Version     string // its version ("" or "unknown" when it has none)
	Description string
	Digest      string // w1: of its tree in the channel
	CloneURL    string // the channel's git URL, without credentials
	Built       time.Time
}

var serverPartRe = lazyre.New(`^[a-zA-Z0-9._-]+$`)

// PluginServerName is the registry name of server of plugin pluginName
// from marketplace: io.wharf.<marketplace>/<plugin>-<server>.
func PluginServerName(marketplace, pluginName, server string) (string, error) {
	if !serverPartRe.MatchString(server) {
		return "", fieldErr("server", "MCP server name %q has a character a registry name cannot hold (letters, digits, '.', '_', '-')", clip(server))
	}
	name := PluginNamespacePrefix + marketplace + "/" + pluginName + "-" + server
	return name, ValidName(name)
}

// pluginVersion is the registry version of a plugin's servers: its own
// version when it is an exact one, else 0.0.0- and a hash of the digest
// the channel serves.
func pluginVersion(p PluginInfo) string {
	if p.Version != "" && p.Version != "unknown" && ValidVersion(p.Version) == nil && !strings.Contains(p.Version, " ") {
		return p.Version
	}
	sum := sha256.Sum256([]byte(p.Digest))
	return "0.0.0-w1." + hex.EncodeToString(sum[:6])
}

// FromPlugin maps one MCP server of an approved plugin to a registry
// entry. A stdio server that a package manager fetches (npx, bunx, pnpm
// dlx, yarn dlx → npm; uvx, pipx run, uv tool run → pypi; docker or podman
// run → oci) is a package; an http or sse server is a remote (its
// ${VAR} placeholders become {VAR} variables). A server that runs a file
// of the plugin is neither: its document names the channel repository
// and the plugin's folder in it, where a client gets it.
func FromPlugin(p PluginInfo, sv capability.Server) (Entry, error) {
	mkt := p.Origin[strings.LastIndex(p.Origin, "@")+1:]
	name, err := PluginServerName(mkt, p.Name, sv.Name)
	if err != nil {
		return Entry{}, err
	}
	desc := p.Description
	if desc == "" {
		desc = fmt.Sprintf("MCP server %s of the plugin %s", sv.Name, p.Origin)
	}
	if r := []rune(desc); len(r) > MaxDescriptionLen {
		desc = string(r[:MaxDescriptionLen-1]) + "…"
	}
	s := Server{
		Schema:      SchemaURL,
		Name:        name,
		Description: desc,
		Title:       clipTitle(p.Name + " " + sv.Name),
		Version:     pluginVersion(p),
	}
	if p.CloneURL != "" {
		s.Repository = &Repository{URL: p.CloneURL, Source: "wharf", Subfolder: "plugins/" + p.Name}
	}
	switch sv.Transport {
	case "http", "sse":
		if r, ok := remote(sv); ok {
			s.Remotes = []Transport{r}
		}
	case "", "stdio":
		if len(sv.Fetches) == 1 {
			if pk, ok := pkg(sv.Fetches[0]); ok {
				s.Packages = []Package{pk}
			}
		}
	}
	if err := s.Validate(); err != nil {
		// What the plugin writes does not fit a document; serve what does.
		s.Packages, s.Remotes, s.Repository = nil, nil, nil
		if err := s.Validate(); err != nil {
			return Entry{}, err
		}
	}
	return Entry{Server: s, Published: p.Built, Updated: p.Built,
		Plugin: &PluginRef{Plugin: p.Name + "@" + p.Channel, Origin: p.Origin, Server: sv.Name, Channel: p.Channel, Digest: p.Digest}}, nil
}

func clipTitle(s string) string {
	if r := []rune(s); len(r) > MaxTitleLen {
		return string(r[:MaxTitleLen])
	}
	return s
}

var placeholderRe = lazyre.New(`\$\{([a-zA-Z_][a-zA-Z0-9_]*)(:-[^}]*)?\}`)

func remote(sv capability.Server) (Transport, bool) {
	t := Transport{Type: "streamable-http", URL: sv.URL}
	if sv.Transport == "sse" {
		t.Type = "sse"
	}
	for _, m := range placeholderRe.Regexp().FindAllStringSubmatch(sv.URL, -1) {
		if t.Variables == nil {
			t.Variables = map[string]Input{}
		}
		t.Variables[m[1]] = Input{IsRequired: true, Description: "set by the plugin as ${" + m[1] + "}"}
	}
	t.URL = placeholderRe.ReplaceAllString(sv.URL, "{$1}")
	return t, t.validate("remote", true) == nil
}

func pkg(f capability.Fetch) (Package, bool) {
	tool := strings.Fields(f.Tool)
	if len(tool) == 0 || f.Package == "" {
		return Package{}, false
	}
	p := Package{RuntimeHint: tool[0], Transport: Transport{Type: "stdio"}}
	id, ver := f.Package, ""
	switch f.Tool {
	case "npx", "npx -y", "bunx", "pnpm dlx", "yarn dlx":
		p.RegistryType, p.RegistryBaseURL = "npm", "https://registry.npmjs.org"
		if i := strings.LastIndex(id, "@"); i > 0 {
			id, ver = id[:i], id[i+1:]
		}
	case "uvx", "pipx run", "uv tool run":
		p.RegistryType, p.RegistryBaseURL = "pypi", "https://pypi.org"
		if i := strings.Index(id, "=="); i > 0 {
			id, ver = id[:i], id[i+2:]
		}
	case "docker run", "podman run":
		p.RegistryType = "oci"
	default:
		return Package{}, false
	}
	if f.Pinned && ValidVersion(ver) == nil {
		p.Version = ver
	}
	p.Identifier = id
	return p, true
}
