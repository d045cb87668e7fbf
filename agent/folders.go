package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// Project-folder trust. What runs code from a project folder (the hooks
// and MCP servers of its settings files, and the hooks, MCP and LSP
// servers of plugins only its settings enable) loads only once the folder
// is trusted, as Claude Code asks once per folder. Prompts from the folder
// (commands, skills, agents) load as before.
//
// Trust is remembered per path in $WHARF_HOME/trusted-folders.json; a
// folder is trusted when it or one of its parents is. Managed settings
// may pre-trust folders (trustedProjectFolders: a list of paths) or forbid
// project code entirely (disableProjectCode: true), which no user trust
// overrides.

// Error types of project-folder trust.
const (
	// TypeFolderUntrusted (layer trust): the project folder is not trusted.
	TypeFolderUntrusted = "folder-untrusted"
	// TypeProjectCodeForbidden (layer policy): managed settings forbid code
	// from project folders.
	TypeProjectCodeForbidden = "project-code-forbidden"
	// TypeTrustStore (layer intent): the trusted-folders file is unreadable.
	TypeTrustStore = "trust-store"
)

// Managed settings keys of project-folder trust.
const (
	KeyTrustedProjectFolders = "trustedProjectFolders"
	KeyDisableProjectCode    = "disableProjectCode"
)

const maxTrustStore = 4 << 20

// TrustedFolder is one remembered folder.
type TrustedFolder struct {
	Path    string    `json:"path"`
	Trusted time.Time `json:"trustedAt"`
}

type trustStore struct {
	Version int             `json:"version"`
	Folders []TrustedFolder `json:"folders"`
}

// CanonicalFolder is the absolute, symlink-resolved form of dir: the key
// trust is remembered under, so an alias of a folder is the same folder.
func CanonicalFolder(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	return filepath.Clean(abs), nil
}

func storePath(home string) string { return layout.New(home).TrustedFolders() }

// TrustedFolders reads the folders trusted in home.
func TrustedFolders(home string) ([]TrustedFolder, error) {
	st, err := readTrustStore(home)
	if err != nil {
		return nil, err
	}
	return st.Folders, nil
}

func readTrustStore(home string) (*trustStore, error) {
	p := storePath(home)
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return &trustStore{Version: 1}, nil
	}
	if err != nil {
		return nil, trustStoreErr(p, err)
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(io.LimitReader(f, maxTrustStore+1)); err != nil {
		return nil, trustStoreErr(p, err)
	}
	if b.Len() > maxTrustStore {
		return nil, trustStoreErr(p, fmt.Errorf("larger than %d bytes", maxTrustStore))
	}
	var st trustStore
	dec := json.NewDecoder(&b)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, trustStoreErr(p, err)
	}
	if st.Version != 1 {
		return nil, trustStoreErr(p, fmt.Errorf("version %d is not 1", st.Version))
	}
	for i, f := range st.Folders {
		if !filepath.IsAbs(f.Path) {
			return nil, trustStoreErr(p, fmt.Errorf("folders[%d].path %q is not absolute", i, f.Path))
		}
	}
	return &st, nil
}

func trustStoreErr(p string, err error) error {
	return &plugin.Error{Layer: plugin.LayerIntent, Type: TypeTrustStore, Object: p, Err: err,
		Hint: "fix or remove the file, then trust the folders again with: wharf agent trust <path>"}
}

// TrustFolder remembers dir (canonicalized) as trusted in home and returns
// its canonical path. Concurrent calls do not lose each other's folders.
func TrustFolder(ctx context.Context, home, dir string) (string, error) {
	p, err := CanonicalFolder(dir)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		if err == nil {
			err = fmt.Errorf("%s is not a directory", p)
		}
		return "", &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeNotFound, Object: p, Err: err, Hint: "pass a project directory"}
	}
	err = updateTrustStore(ctx, home, func(st *trustStore) {
		for _, f := range st.Folders {
			if f.Path == p {
				return
			}
		}
		st.Folders = append(st.Folders, TrustedFolder{Path: p, Trusted: time.Now().UTC().Truncate(time.Second)})
	})
	return p, err
}

// UntrustFolder forgets dir; it reports whether dir was trusted itself
// (a trusted parent still trusts it).
func UntrustFolder(ctx context.Context, home, dir string) (bool, error) {
	p, err := CanonicalFolder(dir)
	if err != nil {
		return false, err
	}
	found := false
	err = updateTrustStore(ctx, home, func(st *trustStore) {
		out := st.Folders[:0]
		for _, f := range st.Folders {
			if f.Path == p {
				found = true
				continue
			}
			out = append(out, f)
		}
		st.Folders = out
	})
	return found, err
}

func updateTrustStore(ctx context.Context, home string, fn func(*trustStore)) error {
	if home == "" {
		return errors.New("agent: no WHARF_HOME to remember trusted folders in")
	}
	unlock, err := cache.LockFile(ctx, layout.New(home).TrustedFoldersLock())
	if err != nil {
		return err
	}
	defer unlock()
	st, err := readTrustStore(home)
	if err != nil {
		return err
	}
	fn(st)
	sort.Slice(st.Folders, func(i, j int) bool { return st.Folders[i].Path < st.Folders[j].Path })
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(storePath(home), append(data, '\n'), 0o600)
}

// within reports whether p is dir or inside it.
func within(p, dir string) bool {
	if p == dir {
		return true
	}
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// FolderTrust is the trust decision for one project folder.
type FolderTrust struct {
	Folder string `json:"folder"`
	// Trusted: code from the folder may load.
	Trusted bool `json:"trusted"`
	// Why: "trusted by the user (<path>)", "pre-trusted by managed
	// settings (<path>)", "not trusted", "forbidden by managed settings".
	Why string `json:"why"`
	// Err is the error skipped components carry; nil when trusted.
	Err error `json:"-"`
}

// managedTrust is what managed settings say about project folders.
type managedTrust struct {
	// preTrusted holds, per managed directory (policy layer) that sets
	// trustedProjectFolders, its folders: a folder is pre-trusted only
	// when every such layer lists it or a parent of it, so a further
	// managed directory can narrow the system's list, never widen it.
	preTrusted [][]string
	forbid     bool
	warnings   []string
}

func readManagedTrust(snap *settings.Snapshot) managedTrust {
	var mt managedTrust
	for _, layer := range settings.ManagedLayers(snap.Docs) {
		var folders []string
		set := false
		for _, doc := range layer {
			if doc.Missing || len(doc.Data) == 0 {
				continue
			}
			s, err := settings.Parse(doc.Name, doc.Data)
			if err != nil {
				// An unreadable managed document fails closed.
				mt.forbid = true
				mt.warnings = append(mt.warnings, fmt.Sprintf("%s: unreadable, so code from project folders does not load: %v", doc.Name, err))
				continue
			}
			if raw, ok := s.Unknown[KeyDisableProjectCode]; ok {
				var b bool
				if err := json.Unmarshal(raw, &b); err != nil {
					mt.forbid = true
					mt.warnings = append(mt.warnings, fmt.Sprintf("%s: %s must be true or false; treated as true", doc.Name, KeyDisableProjectCode))
				} else if b {
					mt.forbid = true
				}
			}
			raw, ok := s.Unknown[KeyTrustedProjectFolders]
			if !ok {
				continue
			}
			set = true
			var ps []string
			if err := json.Unmarshal(raw, &ps); err != nil {
				mt.warnings = append(mt.warnings, fmt.Sprintf("%s: %s must be an array of absolute paths; it pre-trusts nothing", doc.Name, KeyTrustedProjectFolders))
				continue
			}
			for _, p := range ps {
				if !filepath.IsAbs(p) {
					mt.warnings = append(mt.warnings, fmt.Sprintf("%s: %s entry %q is not an absolute path; ignored", doc.Name, KeyTrustedProjectFolders, p))
					continue
				}
				if c, err := CanonicalFolder(p); err == nil {
					folders = append(folders, c)
				}
			}
		}
		if set {
			mt.preTrusted = append(mt.preTrusted, folders)
		}
	}
	return mt
}

// preTrustedBy returns the folder of the first layer's list that
// pre-trusts p, when every layer's list covers p; "" otherwise.
func (mt managedTrust) preTrustedBy(p string) string {
	by := ""
	for _, folders := range mt.preTrusted {
		hit := ""
		for _, d := range folders {
			if within(p, d) {
				hit = d
				break
			}
		}
		if hit == "" {
			return ""
		}
		if by == "" {
			by = hit
		}
	}
	return by
}

// decideFolderTrust decides whether code from project may load.
func decideFolderTrust(home, project string, snap *settings.Snapshot) (FolderTrust, []string) {
	mt := readManagedTrust(snap)
	p, err := CanonicalFolder(project)
	if err != nil {
		p = project
	}
	ft := FolderTrust{Folder: p}
	if mt.forbid {
		ft.Why = "forbidden by managed settings (" + KeyDisableProjectCode + ")"
		ft.Err = &plugin.Error{Layer: plugin.LayerPolicy, Type: TypeProjectCodeForbidden, Object: p,
			Err:  errors.New("managed settings forbid hooks and servers from project folders"),
			Hint: "ask your administrator; commands, skills and agents of the project still load"}
		return ft, mt.warnings
	}
	if d := mt.preTrustedBy(p); d != "" {
		ft.Trusted, ft.Why = true, "pre-trusted by managed settings ("+d+")"
		return ft, mt.warnings
	}
	warns := mt.warnings
	if home != "" {
		folders, err := TrustedFolders(home)
		if err != nil {
			warns = append(warns, err.Error())
		}
		for _, f := range folders {
			if within(p, f.Path) {
				ft.Trusted, ft.Why = true, "trusted by the user ("+f.Path+")"
				return ft, warns
			}
		}
	}
	ft.Why = "not trusted"
	ft.Err = &plugin.Error{Layer: plugin.LayerTrust, Type: TypeFolderUntrusted, Object: p,
		Err:  fmt.Errorf("project folder %s is not trusted: its hooks and servers do not run", p),
		Hint: "if you trust the code in it, run: wharf agent trust " + p + " (then reload)"}
	return ft, warns
}
