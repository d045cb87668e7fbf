package settings

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/viper"

	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/plugin"
)

// DefaultManagedDir is the system managed directory on Linux and the
// other Unix systems (see SystemManagedDir).
const DefaultManagedDir = "/etc/wharf"

// Paths says where each scope's file is. The zero value of a field means the
// scope has no file (for example no project).
type Paths struct {
	Home       string // WHARF_HOME; user scope
	Project    string // project root; project and local scopes
	ManagedDir string // managed scope: the system directory (SystemManagedDir)
	// ExtraManagedDir is a further managed directory (WHARF_MANAGED_DIR,
	// --managed-dir) read after ManagedDir: it adds to the managed scope,
	// it never replaces the system directory.
	ExtraManagedDir string
}

// DefaultPaths resolves WHARF_HOME (default ~/.wharf) from the environment;
// the managed scope is SystemManagedDir plus WHARF_MANAGED_DIR when set.
func DefaultPaths(project string) (Paths, error) {
	v := viper.New()
	v.SetEnvPrefix("WHARF")
	if err := v.BindEnv("home"); err != nil {
		return Paths{}, err
	}
	if err := v.BindEnv("managed_dir"); err != nil {
		return Paths{}, err
	}
	home := v.GetString("home")
	if home == "" {
		uh, err := os.UserHomeDir()
		if err != nil {
			return Paths{}, plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, "WHARF_HOME", "set WHARF_HOME to wharf's state directory", "no home directory: %v", err)
		}
		home = filepath.Join(uh, ".wharf")
	}
	return Paths{Home: home, Project: project, ManagedDir: SystemManagedDir(), ExtraManagedDir: ExtraManagedDir(v.GetString("managed_dir"))}, nil
}

// ExtraManagedDir is dir as a further managed directory: "" when it is
// empty or the system directory itself (read once is enough).
func ExtraManagedDir(dir string) string {
	if dir == "" || filepath.Clean(dir) == filepath.Clean(SystemManagedDir()) {
		return ""
	}
	return dir
}

// File is the settings file of a writable scope, or "" when the scope has none.
func (p Paths) File(s Scope) string {
	switch s {
	case ScopeUser:
		if p.Home != "" {
			return layout.New(p.Home).Settings()
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

// TypeManagedUnreadable is the error type of a managed file or directory
// that exists but cannot be read as one: a dangling symbolic link, a FIFO,
// a device, a directory where a file belongs, a permission denied. Policy
// fails closed on it (a policy-layer error, exit 3): skipping it would
// drop the administrator's policy, and reading a FIFO would hang.
const TypeManagedUnreadable = "managed-file-unreadable"

func managedUnreadable(path, what string) error {
	return plugin.Errorf(plugin.LayerPolicy, TypeManagedUnreadable, path,
		"an administrator must make it a regular file readable by every user (or remove it); until then every request is refused",
		"managed policy file %s cannot be read: %s", path, what)
}

// modeName describes a file type that is not a regular file.
func modeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "it is a directory, not a file"
	case m&fs.ModeNamedPipe != 0:
		return "it is a FIFO (named pipe), not a regular file"
	case m&fs.ModeSocket != 0:
		return "it is a socket, not a regular file"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "it is a device, not a regular file"
	case m&fs.ModeSymlink != 0:
		return "it is a symbolic link"
	}
	return fmt.Sprintf("it is not a regular file (mode %v)", m)
}

// ReadManagedFile reads one managed file (managed-settings.json, a
// fragment, an admin module). missing is true only when nothing is at path.
// Anything else that is not a readable regular file, after following
// symbolic links, is a TypeManagedUnreadable error: a dangling link, a
// FIFO, a directory, a permission denied. It never blocks: the type is
// checked before the file is opened, the file is opened non-blocking and
// checked again once open.
func ReadManagedFile(path string) (data []byte, missing bool, err error) {
	return readRegular(path, true)
}

// readRegular reads the regular file at path without blocking on a FIFO or
// device. strict: a dangling symbolic link is an error (managed files),
// else it counts as missing.
func readRegular(path string, strict bool) ([]byte, bool, error) {
	bad := func(what string) ([]byte, bool, error) {
		if strict {
			return nil, false, managedUnreadable(path, what)
		}
		return nil, false, plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, path, "make it a regular file, or remove it", "reading settings: %s", what)
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return bad(err.Error())
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(path)
		if fi, err = os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			if !strict {
				return nil, true, nil
			}
			return bad(fmt.Sprintf("it is a dangling symbolic link (its target %s does not exist)", target))
		} else if err != nil {
			return bad(fmt.Sprintf("following its symbolic link: %v", err))
		}
	}
	if !fi.Mode().IsRegular() {
		return bad(modeName(fi.Mode()))
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return bad("permission denied")
		}
		return bad(err.Error())
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return bad(err.Error())
	}
	if !st.Mode().IsRegular() { // replaced between the check and the open
		return bad(modeName(st.Mode()))
	}
	if st.Size() > maxSettingsSize {
		return nil, false, plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, path, "settings files are hand-written JSON; shrink it", "settings file is %d bytes, over the %d byte limit", st.Size(), maxSettingsSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSettingsSize+1))
	if err != nil {
		return bad(err.Error())
	}
	if len(data) > maxSettingsSize {
		return nil, false, plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, path, "settings files are hand-written JSON; shrink it", "settings file is over the %d byte limit", maxSettingsSize)
	}
	return data, false, nil
}

// checkManagedDir fails when dir exists but is not a directory wharf can
// list (a dangling link, a file, a permission denied). A dir that does not
// exist is fine: there is no policy there.
func checkManagedDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return managedUnreadable(dir, err.Error())
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(dir)
		if fi, err = os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return managedUnreadable(dir, fmt.Sprintf("it is a dangling symbolic link (its target %s does not exist)", target))
		} else if err != nil {
			return managedUnreadable(dir, err.Error())
		}
	}
	if !fi.IsDir() {
		return managedUnreadable(dir, "it is not a directory")
	}
	return nil
}

// ManagedEntries lists the names in a managed directory (or its
// managed-settings.d) that end in suffix, in name order; nil when dir does
// not exist, a TypeManagedUnreadable error when it cannot be listed.
// Entries of any type are listed: each is then read with ReadManagedFile,
// so a directory or FIFO named like a policy file fails closed instead of
// being skipped.
func ManagedEntries(dir, suffix string) ([]string, error) {
	if err := checkManagedDir(dir); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, managedUnreadable(dir, err.Error())
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), suffix) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// ReadManagedDir reads managed-settings.json and managed-settings.d/*.json in
// name order. Absent files are recorded as Missing documents; a file or
// directory that exists but cannot be read is a TypeManagedUnreadable error.
func ReadManagedDir(dir string) ([]Document, error) {
	if err := checkManagedDir(dir); err != nil {
		return nil, err
	}
	docs := []Document{}
	d, err := readDoc(ScopeManaged, filepath.Join(dir, "managed-settings.json"))
	if err != nil {
		return nil, err
	}
	docs = append(docs, d)
	frag := filepath.Join(dir, "managed-settings.d")
	names, err := ManagedEntries(frag, ".json")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		d, err := readDoc(ScopeManaged, filepath.Join(frag, n))
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
	for i := range docs {
		docs[i].Dir = dir
	}
	return docs, nil
}

func readDoc(scope Scope, path string) (Document, error) {
	data, missing, err := readRegular(path, scope == ScopeManaged)
	if err != nil {
		return Document{}, err
	}
	if missing {
		return Document{Scope: scope, Name: path, Missing: true}, nil
	}
	if data == nil {
		data = []byte{}
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
	for _, dir := range []string{p.ManagedDir, p.ExtraManagedDir} {
		if dir == "" {
			continue
		}
		md, err := ReadManagedDir(dir)
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
