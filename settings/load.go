package settings

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/viper"

	"github.com/wharfhq/wharf/plugin"
)

// DefaultManagedDir is where managed settings live unless WHARF_MANAGED_DIR
// moves them.
const DefaultManagedDir = "/etc/wharf"

// Paths says where each scope's file is. The zero value of a field means the
// scope has no file (for example no project).
type Paths struct {
	Home       string // WHARF_HOME; user scope
	Project    string // project root; project and local scopes
	ManagedDir string // managed scope
}

// DefaultPaths resolves WHARF_HOME (default ~/.wharf) and WHARF_MANAGED_DIR
// (default /etc/wharf) from the environment.
func DefaultPaths(project string) (Paths, error) {
	v := viper.New()
	v.SetEnvPrefix("WHARF")
	if err := v.BindEnv("home"); err != nil {
		return Paths{}, err
	}
	if err := v.BindEnv("managed_dir"); err != nil {
		return Paths{}, err
	}
	v.SetDefault("managed_dir", DefaultManagedDir)
	home := v.GetString("home")
	if home == "" {
		uh, err := os.UserHomeDir()
		if err != nil {
			return Paths{}, plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, "WHARF_HOME", "set WHARF_HOME to wharf's state directory", "no home directory: %v", err)
		}
		home = filepath.Join(uh, ".wharf")
	}
	return Paths{Home: home, Project: project, ManagedDir: v.GetString("managed_dir")}, nil
}

// File is the settings file of a writable scope, or "" when the scope has none.
func (p Paths) File(s Scope) string {
	switch s {
	case ScopeUser:
		if p.Home != "" {
			return filepath.Join(p.Home, "settings.json")
		}
	case ScopeProject:
		if p.Project != "" {
			return filepath.Join(p.Project, ".wharf", "settings.json")
		}
	case ScopeLocal:
		if p.Project != "" {
			return filepath.Join(p.Project, ".wharf", "settings.local.json")
		}
	case ScopeManaged:
		if p.ManagedDir != "" {
			return filepath.Join(p.ManagedDir, "managed-settings.json")
		}
	}
	return ""
}

// maxSettingsSize bounds one settings file; settings are hand-written JSON.
const maxSettingsSize = 4 << 20

// ReadManagedDir reads managed-settings.json and managed-settings.d/*.json in
// name order. Absent files are recorded as Missing documents.
func ReadManagedDir(dir string) ([]Document, error) {
	docs := []Document{}
	d, err := readDoc(ScopeManaged, filepath.Join(dir, "managed-settings.json"))
	if err != nil {
		return nil, err
	}
	docs = append(docs, d)
	frag := filepath.Join(dir, "managed-settings.d")
	entries, err := os.ReadDir(frag)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, frag, "check the directory's permissions", "reading managed settings fragments: %v", err)
	}
	names := []string{}
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		d, err := readDoc(ScopeManaged, filepath.Join(frag, n))
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
	return docs, nil
}

func readDoc(scope Scope, path string) (Document, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Document{Scope: scope, Name: path, Missing: true}, nil
	}
	if err != nil {
		return Document{}, plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, path, "check the file's permissions", "reading settings: %v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Document{}, plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, path, "", "reading settings: %v", err)
	}
	if st.IsDir() {
		return Document{}, plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, path, "remove the directory or point wharf elsewhere", "settings path is a directory")
	}
	if st.Size() > maxSettingsSize {
		return Document{}, plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, path, "settings files are hand-written JSON; shrink it", "settings file is %d bytes, over the %d byte limit", st.Size(), maxSettingsSize)
	}
	data := make([]byte, st.Size())
	if _, err := f.ReadAt(data, 0); err != nil && st.Size() > 0 {
		return Document{}, plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, path, "", "reading settings: %v", err)
	}
	return Document{Scope: scope, Name: path, Data: data}, nil
}

// Load reads every scope's documents (user, project, local, managed with its
// fragments) plus the in-memory flag document (nil for none) and returns the
// Snapshot. Parse problems are Issues on Snapshot.Merged; only I/O failures
// are errors.
func Load(p Paths, flag []byte) (*Snapshot, error) {
	var docs []Document
	for _, s := range []Scope{ScopeUser, ScopeProject, ScopeLocal} {
		path := p.File(s)
		if path == "" {
			continue
		}
		d, err := readDoc(s, path)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
	if flag != nil {
		docs = append(docs, Document{Scope: ScopeFlag, Name: "--settings", Data: flag})
	}
	if p.ManagedDir != "" {
		md, err := ReadManagedDir(p.ManagedDir)
		if err != nil {
			return nil, err
		}
		docs = append(docs, md...)
	}
	return NewSnapshot(docs), nil
}

// Describe is a one-line summary of where a document came from, for messages.
func (d Document) Describe() string {
	if d.Missing {
		return fmt.Sprintf("%s (%s, absent)", d.Name, d.Scope)
	}
	return fmt.Sprintf("%s (%s)", d.Name, d.Scope)
}
