package channel

import (
	"encoding/json"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"

	"github.com/wharfhq/wharf/plugin"
)

// OpenCode reads skills from the URLs its configuration lists under
// skills.urls: it fetches <url>/index.json, then each file of each entry
// from <url>/<entry>/<file> into its cache (~/.cache/opencode/skills/<entry>/),
// and loads every SKILL.md found there. It takes only entries that list a
// SKILL.md at their root, and fetches an entry again when the entry's
// version differs from the one it wrote beside the copy (.opencode-version).
//
// A channel serves each plugin it holds as one such entry, at
// OpenCodeSkillsPath(<channel>): the plugin's files as the channel pins
// them, and, when the plugin has no SKILL.md at its root, one wharf
// generates (OpenCodeSkillFile) naming the plugin, its skills, commands and
// agents. The entry's version (OpenCodeVersion) names the channel and the
// plugin's pinned digest, so OpenCode fetches a plugin again when the
// channel pins another digest, and wharf's inventory can tell the copy
// came from the channel.

// OpenCodeSkillFile is the file OpenCode requires at the root of a skill.
const OpenCodeSkillFile = "SKILL.md"

// OpenCodeVersionFile is where OpenCode keeps, in its copy of a skill
// entry, the version the index gave it.
const OpenCodeVersionFile = ".opencode-version"

// OpenCodeSkillsPath is the path, under the server's /git/, of the skill
// index of channel name: the URL to list under OpenCode's skills.urls.
func OpenCodeSkillsPath(name string) string { return name + "/opencode/skills/" }

// OpenCodeIndex is the index.json OpenCode reads from a skills URL.
type OpenCodeIndex struct {
	Skills []OpenCodeEntry `json:"skills"`
}

// OpenCodeEntry is one entry of the index: a directory of files, fetched
// from <url>/<name>/<file>.
type OpenCodeEntry struct {
	Name    string   `json:"name"`
	Files   []string `json:"files"`
	Version string   `json:"version"`
}

// OpenCodeVersion is the version a channel gives a plugin's entry:
// "wharf <channel> <digest>", followed by " generated-skill" when the
// SKILL.md at its root is wharf's. wharf's inventory reads it back from
// OpenCode's copy (collect.ParseOpenCodeVersion).
type OpenCodeVersion struct {
	Channel, Digest string
	Generated       bool
}

// String is the version as the index carries it.
func (v OpenCodeVersion) String() string {
	s := "wharf " + v.Channel + " " + v.Digest
	if v.Generated {
		s += " generated-skill"
	}
	return s
}

// openCodeServable reports whether OpenCode can fetch a file at p: it
// joins the name to a URL (so no query, fragment, escape or backslash) and
// writes what it fetched as a plain file (so no symlink).
func openCodeServable(f file) bool {
	return f.mode != filemode.Symlink && !strings.ContainsAny(f.path, "?#%\\") && path.Clean(f.path) == f.path && !strings.HasPrefix(f.path, "../")
}

// openCodePlugin is one plugin as OpenCode fetches it: its servable files
// by path, and what was left out.
type openCodePlugin struct {
	files     map[string][]byte
	generated bool
	left      []string
}

// openCodeFiles makes the plugin named name of files into an entry.
func openCodeFiles(channelName, name, description string, files []file) openCodePlugin {
	op := openCodePlugin{files: map[string][]byte{}}
	for _, f := range files {
		if !openCodeServable(f) {
			op.left = append(op.left, f.path)
			continue
		}
		op.files[f.path] = f.data
	}
	if _, ok := op.files[OpenCodeSkillFile]; !ok {
		op.files[OpenCodeSkillFile] = openCodeSkill(channelName, name, description, files)
		op.generated = true
	}
	return op
}

// openCodeSkill is the SKILL.md wharf generates at the root of a plugin
// that has none: a skill named after the plugin, its description the
// plugin's, whose body lists the plugin's skills, commands and agents as
// files beside it.
func openCodeSkill(channelName, name, description string, files []file) []byte {
	if description == "" {
		description = "The " + name + " plugin of wharf channel " + channelName + "."
	}
	var skills, commands, agents []string
	for _, f := range files {
		switch {
		case strings.HasPrefix(f.path, "skills/") && path.Base(f.path) == OpenCodeSkillFile:
			skills = append(skills, f.path)
		case strings.HasPrefix(f.path, "commands/") && strings.HasSuffix(f.path, ".md"):
			commands = append(commands, f.path)
		case strings.HasPrefix(f.path, "agents/") && strings.HasSuffix(f.path, ".md"):
			agents = append(agents, f.path)
		}
	}
	nb, _ := json.Marshal(name)
	db, _ := json.Marshal(description)
	var b strings.Builder
	fmt.Fprintf(&b, "---\nname: %s\ndescription: %s\n---\n\n", nb, db)
	fmt.Fprintf(&b, "# %s\n\nThe plugin %s, approved in the wharf channel %s. Its files are in this skill's directory.\n", name, name, channelName)
	list := func(title, hint string, ps []string) {
		if len(ps) == 0 {
			return
		}
		sort.Strings(ps)
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n", title, hint)
		for _, p := range ps {
			fmt.Fprintf(&b, "- %s\n", p)
		}
	}
	list("Skills", "Loaded as skills of their own:", skills)
	list("Commands", "Prompts: to run one, read its file and follow it, with $ARGUMENTS standing for what the user gave.", commands)
	list("Agents", "Instructions for a subagent:", agents)
	return []byte(b.String())
}

// pluginDescription is the description in the plugin's manifest, if any.
func pluginDescription(files []file) string {
	for _, f := range files {
		if f.path == ".claude-plugin/plugin.json" && f.mode != filemode.Symlink {
			var m struct {
				Description string `json:"description"`
			}
			if json.Unmarshal(f.data, &m) == nil {
				return m.Description
			}
		}
	}
	return ""
}

// channelPins reads the channel's pins file from its tree.
func channelPins(src storage.Storer, root *object.Tree) (*plugin.Pins, error) {
	name := ".claude-plugin/" + plugin.PinsFileName
	f, err := root.File(name)
	if err != nil {
		return nil, fmt.Errorf("channel repository has no %s: %w", name, err)
	}
	rd, err := f.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	b, err := io.ReadAll(io.LimitReader(rd, maxTreeBytes))
	if err != nil {
		return nil, err
	}
	return plugin.ParsePins(b, name)
}

// OpenCodeSkills returns the skill index of the channel repository src (at
// its Branch): one entry per plugin, named as the plugin, listing its files
// (and wharf's SKILL.md where the plugin has none), versioned with the
// channel's name and the plugin's pinned digest. Files OpenCode cannot
// fetch as they are (symlinks; names with ?, #, % or \) are left out, so
// OpenCode's copy of such a plugin does not have the pinned digest; they
// are returned by plugin, as left.
func OpenCodeSkills(src storage.Storer) (idx OpenCodeIndex, left map[string][]string, err error) {
	_, root, err := channelHead(src)
	if err != nil {
		return OpenCodeIndex{}, nil, err
	}
	pins, err := channelPins(src, root)
	if err != nil {
		return OpenCodeIndex{}, nil, err
	}
	names := make([]string, 0, len(pins.Plugins))
	for n := range pins.Plugins {
		names = append(names, n)
	}
	sort.Strings(names)
	idx.Skills = []OpenCodeEntry{}
	left = map[string][]string{}
	for _, n := range names {
		if plugin.ValidateName(n) != nil {
			continue
		}
		files, err := pluginFiles(src, root, n)
		if err != nil {
			return OpenCodeIndex{}, nil, err
		}
		op := openCodeFiles(pins.Channel, n, pluginDescription(files), files)
		e := OpenCodeEntry{Name: n, Files: make([]string, 0, len(op.files)),
			Version: OpenCodeVersion{Channel: pins.Channel, Digest: pins.Plugins[n].Integrity, Generated: op.generated}.String()}
		for p := range op.files {
			e.Files = append(e.Files, p)
		}
		sort.Strings(e.Files)
		idx.Skills = append(idx.Skills, e)
		if len(op.left) > 0 {
			left[n] = op.left
		}
	}
	return idx, left, nil
}

// OpenCodeFile returns the file at rel of the entry of plugin pluginName in
// the channel repository src, as the index lists it. A plugin the channel
// does not hold, or a file its entry does not list, is ErrNoPlugin.
func OpenCodeFile(src storage.Storer, pluginName, rel string) ([]byte, error) {
	if err := plugin.ValidateName(pluginName); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoPlugin, err)
	}
	_, root, err := channelHead(src)
	if err != nil {
		return nil, err
	}
	pins, err := channelPins(src, root)
	if err != nil {
		return nil, err
	}
	if _, ok := pins.Plugins[pluginName]; !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoPlugin, pluginName)
	}
	files, err := pluginFiles(src, root, pluginName)
	if err != nil {
		return nil, err
	}
	op := openCodeFiles(pins.Channel, pluginName, pluginDescription(files), files)
	b, ok := op.files[rel]
	if !ok {
		return nil, fmt.Errorf("%w: %s has no file %s", ErrNoPlugin, pluginName, rel)
	}
	return b, nil
}
