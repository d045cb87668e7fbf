package cache

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/wharfhq/wharf/plugin"
)

// claudeInstalled is Claude Code's ~/.claude/plugins/installed_plugins.json.
type claudeInstalled struct {
	Version int                      `json:"version"`
	Plugins map[string][]claudeEntry `json:"plugins"`
}

type claudeEntry struct {
	Scope        string `json:"scope"`
	ProjectPath  string `json:"projectPath,omitempty"`
	InstallPath  string `json:"installPath"`
	Version      string `json:"version"`
	InstalledAt  string `json:"installedAt"`
	LastUpdated  string `json:"lastUpdated"`
	GitCommitSha string `json:"gitCommitSha,omitempty"`
	Auto         bool   `json:"auto,omitempty"`
}

// ExportInstalled writes the registry as a Claude Code installed_plugins.json
// (version 2), so a Claude Code client sees the plugins wharf installed.
func (c *Cache) ExportInstalled(w io.Writer) error {
	recs, err := c.List()
	if err != nil {
		return err
	}
	out := claudeInstalled{Version: 2, Plugins: map[string][]claudeEntry{}}
	for _, r := range recs {
		out.Plugins[r.ID.String()] = append(out.Plugins[r.ID.String()], claudeEntry{
			Scope: r.Scope, ProjectPath: r.ProjectPath, InstallPath: r.InstallPath, Version: r.Version,
			InstalledAt: r.InstalledAt.UTC().Format(time.RFC3339Nano), LastUpdated: r.LastUpdated.UTC().Format(time.RFC3339Nano),
			GitCommitSha: r.GitCommitSha, Auto: r.Auto,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// ParseInstalled reads a Claude Code installed_plugins.json (version 2) into
// records, in id then scope order. The records point at Claude Code's cache;
// the installer re-materializes each into wharf's cache before Put.
// Every id, version, scope and time is checked; the error names the entry.
func ParseInstalled(r io.Reader) ([]Record, error) {
	b, err := io.ReadAll(io.LimitReader(r, 32<<20))
	if err != nil {
		return nil, err
	}
	var in claudeInstalled
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&in); err != nil {
		return nil, parseErr("", "not JSON of the expected shape: %v", err)
	}
	if in.Version != 2 {
		return nil, parseErr("version", "version %d; only version 2 is read", in.Version)
	}
	ids := make([]string, 0, len(in.Plugins))
	for k := range in.Plugins {
		ids = append(ids, k)
	}
	sort.Strings(ids)
	var out []Record
	for _, k := range ids {
		id, err := plugin.ParseID(k)
		if err != nil {
			return nil, parseErr("plugins."+k, "%v", err)
		}
		for i, e := range in.Plugins[k] {
			field := fmt.Sprintf("plugins[%q][%d]", k, i)
			if !validScopes[e.Scope] {
				return nil, parseErr(field+".scope", "scope %q is not user, project or local", e.Scope)
			}
			if _, err := plugin.SanitizeVersion(e.Version); err != nil {
				return nil, parseErr(field+".version", "%v", err)
			}
			rec := Record{ID: id, Version: e.Version, Scope: e.Scope, ProjectPath: e.ProjectPath, InstallPath: e.InstallPath,
				GitCommitSha: e.GitCommitSha, Auto: e.Auto}
			if rec.InstalledAt, err = parseTime(e.InstalledAt); err != nil {
				return nil, parseErr(field+".installedAt", "%v", err)
			}
			if rec.LastUpdated, err = parseTime(e.LastUpdated); err != nil {
				return nil, parseErr(field+".lastUpdated", "%v", err)
			}
			out = append(out, rec)
		}
	}
	return out, nil
}

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

func parseErr(field, format string, args ...any) error {
	obj := "installed_plugins.json"
	if field != "" {
		obj += ": " + field
	}
	return &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeManifestParse, Object: obj,
		Err: fmt.Errorf(format, args...), Hint: "fix or move aside ~/.claude/plugins/installed_plugins.json and import again"}
}

// ImportInstalled reads a Claude Code installed_plugins.json, copies each
// plugin's installPath (Claude Code's cache dir) into this cache through the
// same fill → seal → verify → rename path as any install, and records it
// with its scope, times, gitCommitSha and auto flag. The registry holds one
// record per plugin: when a plugin has entries in several scopes, the user
// entry (else the first) is imported and the others are reported in skipped.
// An entry whose directory is missing stops the import with an error naming
// it; records already written stay (each is complete on its own).
func (c *Cache) ImportInstalled(ctx context.Context, r io.Reader) (imported []Record, skipped []string, err error) {
	recs, err := ParseInstalled(r)
	if err != nil {
		return nil, nil, err
	}
	chosen := map[plugin.ID]int{}
	for i, rec := range recs {
		j, ok := chosen[rec.ID]
		switch {
		case !ok:
			chosen[rec.ID] = i
		case rec.Scope == "user" && recs[j].Scope != "user":
			skipped = append(skipped, fmt.Sprintf("%s (%s scope)", recs[j].ID, recs[j].Scope))
			chosen[rec.ID] = i
		default:
			skipped = append(skipped, fmt.Sprintf("%s (%s scope)", rec.ID, rec.Scope))
		}
	}
	for i, rec := range recs {
		if chosen[rec.ID] != i {
			continue
		}
		src := rec.InstallPath
		if fi, err := os.Stat(src); err != nil || !fi.IsDir() || src == "" {
			return imported, skipped, parseErr(fmt.Sprintf("plugins[%q].installPath", rec.ID.String()),
				"%s is not a directory; reinstall the plugin in Claude Code or remove the entry", src)
		}
		v, err := c.Ensure(ctx, Request{ID: rec.ID, Version: rec.Version, Fill: func(ctx context.Context, dir string) error {
			// Claude Code's bookkeeping (a session's lease) is not the plugin.
			return copyTree(src, dir, plugin.ClaudeCacheBookkeeping...)
		}})
		if err != nil {
			return imported, skipped, err
		}
		out := RecordFor(v, rec.Scope)
		out.ProjectPath, out.GitCommitSha, out.Auto, out.InstalledAt = rec.ProjectPath, rec.GitCommitSha, rec.Auto, rec.InstalledAt
		if err := c.Put(ctx, out); err != nil {
			return imported, skipped, err
		}
		got, err := c.Get(rec.ID)
		if err != nil {
			return imported, skipped, err
		}
		imported = append(imported, got)
	}
	return imported, skipped, nil
}
