package home

import (
	"os"
	"path/filepath"
	"time"

	"github.com/wharfhq/wharf/internal/cli/shell"
	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/client/install"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/internal/core/trust"
)

// SettingsPaths says where each scope's settings file is: the user scope
// under WHARF_HOME, the project scopes under the project (Options.Project,
// else the nearest directory with a .wharf or .git above the working
// directory, else the working directory), the managed scope in the system
// managed directory and the further one.
func (h *Home) SettingsPaths() settings.Paths {
	project := h.project
	if project == "" {
		wd, _ := os.Getwd()
		project = ProjectRoot(wd)
	}
	src := h.PolicySources()
	return settings.Paths{Home: h.paths.Home(), Project: project, ManagedDir: src.ManagedDir, ExtraManagedDir: src.ExtraManagedDir}
}

// ProjectRoot is the nearest directory from wd up with a .wharf or .git
// directory, else wd.
func ProjectRoot(wd string) string {
	for d := wd; ; d = filepath.Dir(d) {
		for _, marker := range []string{".wharf", ".git"} {
			if fi, err := os.Stat(filepath.Join(d, marker)); err == nil && fi.IsDir() {
				return d
			}
		}
		if filepath.Dir(d) == d {
			return wd
		}
	}
}

// TrustedKeys reads the public keys in $WHARF_HOME/keys/*.pub.
func (h *Home) TrustedKeys() (trust.Keyring, error) { return shell.TrustedKeys(h.paths.Keys()) }

// SetGrace makes d the gc grace of what the home opens from now on (a
// command's --grace over gc-grace); d must not be negative, and 0 means no
// grace at all.
func (h *Home) SetGrace(d time.Duration) { h.cfg.Grace = d }

// Cache is the plugin cache over the store, with the read-only seed
// directories of WHARF_SEED_DIRS and the configured gc grace.
func (h *Home) Cache() (*cache.Cache, error) {
	st, err := h.Store()
	if err != nil {
		return nil, err
	}
	grace := h.cfg.Grace
	if grace == 0 {
		// cache.Options reads 0 as "the default"; a configured 0s means
		// no grace at all, which the shortest positive duration is.
		grace = time.Nanosecond
	}
	return cache.New(cache.Options{Home: h.paths.Home(), Store: st, SeedDirs: cache.SeedDirsFromEnv(), Grace: grace})
}

// Installer builds the install use cases over this home: store,
// marketplaces, cache, fetcher, policy and the settings scopes.
func (h *Home) Installer() (*install.Installer, error) {
	h.usedPlugins = true
	mgr, err := h.Marketplaces()
	if err != nil {
		return nil, err
	}
	c, err := h.Cache()
	if err != nil {
		return nil, err
	}
	f := source.NewFetcher(h.cfg.Fetch)
	f.Progress = h.progress
	f.ProgressBar = h.progress
	if h.getenv("WHARF_ALLOW_FILE_SOURCES") == "1" {
		f.AllowFileURLs = true
	}
	pol, err := h.Policy()
	if err != nil {
		return nil, err
	}
	// blockedMarketplaces decides every source a plugin's tree comes
	// from, and every redirect of its fetch, not only its marketplace.
	f.Gate = pol
	keys, err := h.TrustedKeys()
	if err != nil {
		return nil, err
	}
	// Without a policy server, updates that add capabilities need the
	// user's --accept; with one, its admissions decide.
	accepted := ""
	if !h.hasPolicyServer {
		accepted = h.paths.Accepted()
	}
	return install.New(install.Options{
		AcceptedFile: accepted,
		Marketplaces: mgr,
		Cache:        c,
		Fetcher:      f,
		Policy:       pol,
		Settings:     h.SettingsPaths(),
		Keys:         keys,
		Progress:     h.progress,
		ProgressBar:  h.progress,
		Getenv:       h.Getenv,
	})
}
