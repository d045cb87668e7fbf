package collect

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/plugin"
)

// Gemini names an unmodified Gemini CLI home.
type Gemini struct {
	// Dir is Gemini CLI's directory: ~/.gemini.
	Dir string
}

// GeminiMarketplace is the marketplace an extension is reported under when
// it did not come from a wharf channel: Gemini CLI has no marketplaces.
const GeminiMarketplace = "gemini"

// GeminiInstallFile is the install metadata Gemini CLI keeps in each
// extension's copy; GeminiManifestFile the extension's manifest.
const (
	GeminiInstallFile  = ".gemini-extension-install.json"
	GeminiManifestFile = "gemini-extension.json"
)

// GeminiInstall is what Gemini CLI's copy of one extension says of it.
type GeminiInstall struct {
	Name, Version string
	// Source and Type are the install metadata's: the git URL or local
	// path it came from, and git, local, link or github-release.
	Source, Type string
	// Channel is the wharf channel the source names
	// (.../git/<channel>/gemini/<name>.git), or "".
	Channel string
}

// wharfExtension is the path a wharf channel serves a plugin as an
// extension at: /git/<channel>/gemini/<plugin>.git.
var wharfExtension = regexp.MustCompile(`/git/([^/]+)/gemini/([^/]+)\.git$`)

// ParseGeminiExtension reads an extension's manifest and install metadata
// (the copy in dir under the name wharf listed, named in errors).
func ParseGeminiExtension(dir string, manifest, meta []byte) (GeminiInstall, error) {
	var m struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	mf := filepath.Join(dir, GeminiManifestFile)
	if err := json.Unmarshal(manifest, &m); err != nil {
		return GeminiInstall{}, agentErr("gemini", mf, "", "not a JSON object: %v", err)
	}
	if err := plugin.ValidateName(m.Name); err != nil {
		return GeminiInstall{}, agentErr("gemini", mf, "name", "%v", err)
	}
	in := GeminiInstall{Name: m.Name, Version: m.Version}
	if meta == nil {
		return in, nil
	}
	var md struct {
		Source string `json:"source"`
		Type   string `json:"type"`
	}
	if err := json.Unmarshal(meta, &md); err != nil {
		return GeminiInstall{}, agentErr("gemini", filepath.Join(dir, GeminiInstallFile), "", "not a JSON object: %v", err)
	}
	in.Source, in.Type = md.Source, md.Type
	if md.Type == "git" {
		if sm := wharfExtension.FindStringSubmatch(md.Source); sm != nil && sm[2] == m.Name && plugin.ValidateName(sm[1]) == nil {
			in.Channel = sm[1]
		}
	}
	return in, nil
}

// Read reads the Gemini CLI home: each extension copy in extensions/<name>/
// (its gemini-extension.json and .gemini-extension-install.json). An
// extension installed from a wharf channel is reported as
// <name>@<channel>, installed by the user, with the w1: digest of its copy
// without the manifest wharf generated and Gemini CLI's install metadata
// (so it equals the channel's pin); any other as <name>@gemini,
// sideloaded, hashed without the install metadata alone. Gemini CLI
// enables an extension per directory (extension-enablement.json): one is
// reported enabled unless every override it has disables it. A copy that
// cannot be read is reported failed.
func (g Gemini) Read() ([]inventory.Plugin, []string, error) {
	if fi, err := os.Stat(g.Dir); err != nil || !fi.IsDir() {
		return nil, nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: TypeAgentState, Object: g.Dir,
			Err: errors.New("not a Gemini CLI home (no such directory)"), Hint: "give Gemini CLI's directory with --gemini-home (it holds extensions/)"}
	}
	extDir := filepath.Join(g.Dir, "extensions")
	ents, err := os.ReadDir(extDir)
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, agentErr("gemini", extDir, "", "%v", plainErr(err))
	}
	off, err := geminiDisabled(filepath.Join(extDir, "extension-enablement.json"))
	if err != nil {
		return nil, nil, err
	}
	out := []inventory.Plugin{}
	var warns []string
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		if plugin.ValidateName(name) != nil {
			warns = append(warns, fmt.Sprintf("%s: not an extension name wharf reports; skipped", filepath.Join(extDir, name)))
			continue
		}
		dir := filepath.Join(extDir, name)
		p := inventory.Plugin{ID: name + "@" + GeminiMarketplace, Scope: "user", Install: inventory.InstallSideloaded, Enabled: !off[name], State: stateOfEnabled(!off[name])}
		manifest, err := readOptional(filepath.Join(dir, GeminiManifestFile))
		if err == nil && manifest == nil {
			err = errors.New("no " + GeminiManifestFile)
		}
		var meta []byte
		if err == nil {
			meta, err = readOptional(filepath.Join(dir, GeminiInstallFile))
		}
		var in GeminiInstall
		if err == nil {
			in, err = ParseGeminiExtension(dir, manifest, meta)
		}
		if err == nil && in.Name != name {
			err = fmt.Errorf("%s names the extension %q", filepath.Join(dir, GeminiManifestFile), in.Name)
		}
		if err != nil {
			p.State, p.Reason = inventory.StateFailed, plainErr(err)
			out = append(out, p)
			continue
		}
		p.Version = in.Version
		omit := []string{GeminiInstallFile}
		if in.Channel != "" {
			p.ID, p.Install = name+"@"+in.Channel, inventory.InstallUser
			omit = append(omit, GeminiManifestFile)
		}
		var why string
		p.Digest, why = agentDigest(dir, omit...)
		if why != "" {
			p.State, p.Reason = inventory.StateFailed, why
		}
		out = append(out, p)
	}
	return out, warns, nil
}

// geminiDisabled reads extension-enablement.json: the extensions every
// override of which disables them ("!path").
func geminiDisabled(file string) (map[string]bool, error) {
	b, err := readOptional(file)
	if err != nil || b == nil {
		if err != nil {
			return nil, agentErr("gemini", file, "", "%v", plainErr(err))
		}
		return map[string]bool{}, nil
	}
	var doc map[string]struct {
		Overrides []string `json:"overrides"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, agentErr("gemini", file, "", "not a JSON object of extensions: %v", err)
	}
	off := map[string]bool{}
	for name, e := range doc {
		if len(e.Overrides) == 0 {
			continue
		}
		all := true
		for _, o := range e.Overrides {
			all = all && strings.HasPrefix(o, "!")
		}
		off[name] = all
	}
	return off, nil
}
