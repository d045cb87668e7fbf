package marketplace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/core/netidle"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/plugin"
)

// Bucket is the store bucket of known marketplaces: name → Known (JSON).
const Bucket = "marketplaces"

// DefaultGitTimeout bounds each network step unless WHARF_GIT_TIMEOUT says otherwise.
const DefaultGitTimeout = fetch.DefaultTimeout

// DefaultNetIdleTimeout fails a network step whose connection moves no byte
// for this long, unless WHARF_NET_IDLE_TIMEOUT says otherwise.
const DefaultNetIdleTimeout = fetch.DefaultIdleTimeout

// maxManifestBytes bounds a marketplace.json fetched over HTTP (unless the
// fetch configuration sets a lower metadata limit).
const maxManifestBytes = 16 << 20

// Sentinel errors. Callers branch on them with errors.Is; the *plugin.Error
// wrapping them carries the object and the next step.
var (
	// ErrTimeout: a network step did not finish within the configured timeout.
	ErrTimeout = fetch.ErrTimeout
	// ErrUnknown: no marketplace of that name is known.
	ErrUnknown = errors.New("unknown marketplace")
	// ErrNameTaken: a marketplace of that name is already known from another source.
	ErrNameTaken = errors.New("marketplace name already taken")
)

// Gate is asked before wharf touches the network or disk for a marketplace
// source (add and update). A non-nil error refuses the operation and is
// returned as is, so a policy engine can return its own typed error. A nil
// Gate allows everything. Implementations must be safe for concurrent use.
type Gate interface {
	AllowAdd(src plugin.MarketplaceSource) error
}

// Known is one known marketplace, as persisted in the store. The JSON shape
// is Claude Code's known_marketplaces.json entry plus the name (and, for git
// sources, the commit wharf checked out).
type Known struct {
	Name            string                   `json:"name"`
	Source          plugin.MarketplaceSource `json:"source"`
	InstallLocation string                   `json:"installLocation"`
	LastUpdated     time.Time                `json:"lastUpdated"`
	AutoUpdate      *bool                    `json:"autoUpdate,omitempty"`
	Commit          string                   `json:"commit,omitempty"`
}

// Options configure a Manager. The zero value of every field has a default.
type Options struct {
	// Dir is where clones and downloaded catalogs live (WHARF_HOME/marketplaces).
	Dir string
	// Gate is consulted before any network or disk access on add and update.
	Gate Gate
	// Progress receives git's raw progress output; nil for none.
	Progress io.Writer
	// ProgressBar is a terminal on which git fetches draw a progress bar
	// (bytes received and the server's phase) instead of the raw output;
	// nil draws none (not a terminal, --quiet, --json).
	ProgressBar io.Writer
	// Fetch is what every network step obeys (GitHub and GitLab hosts,
	// timeouts, idle limit, proxy, size limits, tokens); the command builds
	// it once from the config file and the environment.
	Fetch fetch.Config
	// GitTimeout, NetIdleTimeout, Getenv and HTTPClient fill the fields of
	// Fetch left zero (Timeout, IdleTimeout, Getenv, Client); with Fetch's
	// GitHubHost empty, Getenv's WHARF_GITHUB_HOST names the GitHub host.
	//
	// Deprecated: set Fetch.
	GitTimeout     time.Duration
	NetIdleTimeout time.Duration
	Getenv         func(string) string
	HTTPClient     *http.Client
	// Now stamps lastUpdated; nil means time.Now.
	Now func() time.Time
}

// fetchConfig is Fetch with the deprecated fields filled in.
func (o *Options) fetchConfig() fetch.Config {
	c := o.Fetch
	if c.Timeout == 0 {
		c.Timeout = o.GitTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = o.NetIdleTimeout
	}
	if c.Getenv == nil {
		c.Getenv = o.Getenv
	}
	if c.Getenv == nil {
		c.Getenv = os.Getenv
	}
	if c.Client == nil {
		c.Client = o.HTTPClient
	}
	if c.GitHubHost == "" {
		c.GitHubHost = strings.TrimSpace(c.Getenv("WHARF_GITHUB_HOST"))
	}
	return c
}

func (o *Options) now() time.Time {
	if o.Now == nil {
		return time.Now().UTC().Truncate(time.Second)
	}
	return o.Now()
}

// Manager adds, updates, lists and removes known marketplaces. It is safe for
// use by one goroutine at a time; across processes the store's lock
// serializes commands.
type Manager struct {
	st   store.Store
	opts Options
	net  fetch.Config
}

// NewManager returns a Manager over st and opts.Dir.
func NewManager(st store.Store, opts Options) *Manager {
	return &Manager{st: st, opts: opts, net: opts.fetchConfig()}
}

// List returns the known marketplaces by name.
func (m *Manager) List() ([]Known, error) {
	var out []Known
	err := m.st.View(func(r store.Reader) error {
		kvs, err := r.List(Bucket, "")
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			var k Known
			if err := json.Unmarshal(kv.Value, &k); err != nil {
				return fmt.Errorf("store: marketplace record %q is corrupt: %w; remove it with: wharf marketplace remove %s", kv.Key, err, kv.Key)
			}
			out = append(out, m.located(k))
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// Get returns the known marketplace called name.
func (m *Manager) Get(name string) (Known, error) {
	var k Known
	err := m.st.View(func(r store.Reader) error {
		var err error
		k, err = getKnown(r, name)
		return err
	})
	return m.located(k), err
}

// located resolves the location of a record as stored: a clone the manager
// owns is stored by its name under Dir (see put), so that a home moved or
// copied elsewhere finds its own clones; the absolute path earlier versions
// stored for such a clone, under another directory of the same name, is
// read the same way. A local marketplace keeps its own absolute path.
func (m *Manager) located(k Known) Known {
	loc := k.InstallLocation
	switch {
	case m.opts.Dir == "" || loc == "":
	case !filepath.IsAbs(loc):
		if filepath.IsLocal(loc) && !strings.ContainsAny(loc, `/\`) {
			k.InstallLocation = filepath.Join(m.opts.Dir, loc)
		}
	case !k.Source.IsLocal() && !m.owns(loc) && filepath.Base(loc) == k.Name &&
		filepath.Base(filepath.Dir(loc)) == filepath.Base(m.opts.Dir):
		k.InstallLocation = filepath.Join(m.opts.Dir, k.Name)
	}
	return k
}

func getKnown(r store.Reader, name string) (Known, error) {
	b, err := r.Get(Bucket, name)
	if errors.Is(err, store.ErrNotFound) {
		return Known{}, &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeNotFound, Object: name,
			Err: fmt.Errorf("marketplace %q: %w", name, ErrUnknown), Hint: "see the known ones with: wharf marketplace list; add it with: wharf marketplace add <source>"}
	}
	if err != nil {
		return Known{}, err
	}
	var k Known
	if err := json.Unmarshal(b, &k); err != nil {
		return Known{}, fmt.Errorf("store: marketplace record %q is corrupt: %w", name, err)
	}
	return k, nil
}

// Add fetches the marketplace at src and records it under name (or, when
// name is empty, under the name its marketplace.json declares). Adding a name
// that is known from another source fails and names both sources; adding the
// same source again refreshes it. Local sources are read in place.
func (m *Manager) Add(ctx context.Context, src plugin.MarketplaceSource, name string) (Known, error) {
	if err := src.Validate(); err != nil {
		return Known{}, err
	}
	if err := m.allow(src); err != nil {
		return Known{}, err
	}
	if name != "" {
		if err := plugin.ValidateName(name); err != nil {
			return Known{}, plugin.Errorf(plugin.LayerIntent, plugin.TypeInvalidID, name, "pick a name of letters, digits, '.', '_' and '-'", "marketplace name: %w", err)
		}
		if err := CheckName(name, src); err != nil {
			return Known{}, err
		}
		if err := m.checkName(name, src); err != nil {
			return Known{}, err
		}
	}
	fetched, err := m.materialize(ctx, src)
	if err != nil {
		return Known{}, err
	}
	defer fetched.cleanup()
	if name == "" {
		name = fetched.manifest.Name
		if err := CheckName(name, src); err != nil {
			return Known{}, err
		}
	}
	if err := m.checkName(name, src); err != nil {
		return Known{}, err
	}
	k := Known{Name: name, Source: src, LastUpdated: m.opts.now(), Commit: fetched.commit, InstallLocation: fetched.location}
	if fetched.tmp != "" {
		k.InstallLocation = filepath.Join(m.opts.Dir, name)
		if err := swapDir(fetched.tmp, k.InstallLocation); err != nil {
			return Known{}, plugin.Errorf(plugin.LayerMaterialization, plugin.TypeSource, name, "check permissions and free space under "+m.opts.Dir, "install marketplace: %w", err)
		}
		fetched.tmp = ""
	}
	if err := m.put(ctx, k, ChangeAdd); err != nil {
		return Known{}, err
	}
	return k, nil
}

// checkName fails when name is known from a source other than src.
func (m *Manager) checkName(name string, src plugin.MarketplaceSource) error {
	k, err := m.Get(name)
	if errors.Is(err, ErrUnknown) {
		return nil
	}
	if err != nil {
		return err
	}
	if k.Source.Equal(src) {
		return nil
	}
	return &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeConflict, Object: name,
		Err:  fmt.Errorf("marketplace %q is already known from %s; cannot add it again from %s: %w", name, k.Source, src, ErrNameTaken),
		Hint: fmt.Sprintf("add it under another name with --name, or first run: wharf marketplace remove %s", name)}
}

// Update refreshes the marketplace called name from its source: a git clone
// is fetched and hard-reset to the remote ref (or pinned SHA), a URL is
// downloaded again, a local source is re-read. If anything fails, including
// a new marketplace.json that does not parse, the previous copy stays as it was.
func (m *Manager) Update(ctx context.Context, name string) (Known, error) {
	k, err := m.Get(name)
	if err != nil {
		return Known{}, err
	}
	if err := m.allow(k.Source); err != nil {
		return Known{}, err
	}
	// A record made before reserved names were enforced is not refreshed
	// under a name it may not hold.
	if err := CheckName(k.Name, k.Source); err != nil {
		return Known{}, err
	}
	switch {
	case k.Source.IsGit() && isGitDir(k.InstallLocation):
		g := m.gitClient(k.Source)
		before, after, err := g.update(ctx, k.Source, k.InstallLocation)
		if err != nil {
			return Known{}, err
		}
		if _, err := readManifest(manifestFile(k.Source, k.InstallLocation)); err != nil {
			if before != after {
				if rerr := revertTo(k.InstallLocation, before); rerr != nil {
					return Known{}, fmt.Errorf("%w; reverting to %s also failed: %v", err, before, rerr)
				}
			}
			return Known{}, err
		}
		k.Commit = after
	case k.Source.IsLocal():
		if _, err := readManifest(manifestFile(k.Source, k.InstallLocation)); err != nil {
			return Known{}, err
		}
	default: // a URL, or a clone that went missing: fetch afresh and swap
		fetched, err := m.materialize(ctx, k.Source)
		if err != nil {
			return Known{}, err
		}
		defer fetched.cleanup()
		if err := swapDir(fetched.tmp, k.InstallLocation); err != nil {
			return Known{}, plugin.Errorf(plugin.LayerMaterialization, plugin.TypeSource, name, "check permissions and free space under "+m.opts.Dir, "install marketplace: %w", err)
		}
		fetched.tmp = ""
		k.Commit = fetched.commit
	}
	k.LastUpdated = m.opts.now()
	return k, m.put(ctx, k, ChangeUpdate)
}

// Remove forgets the marketplace called name and deletes its clone. A local
// directory or file source is never deleted: wharf only read it.
func (m *Manager) Remove(ctx context.Context, name string) (Known, error) {
	k, err := m.Get(name)
	if err != nil {
		return Known{}, err
	}
	var trash string
	if m.owns(k.InstallLocation) {
		trash = filepath.Join(m.opts.Dir, ".removing-"+name+"-"+randSuffix())
		if err := os.Rename(k.InstallLocation, trash); err != nil && !os.IsNotExist(err) {
			return Known{}, fmt.Errorf("remove marketplace %s: %w", name, err)
		}
	}
	hook := txHookOf(ctx)
	if err := m.st.Update(func(tx store.Tx) error {
		if err := tx.Delete(Bucket, name); err != nil {
			return err
		}
		if hook != nil {
			return hook(tx, Change{Op: ChangeRemove, Known: k})
		}
		return nil
	}); err != nil {
		if trash != "" {
			_ = os.Rename(trash, k.InstallLocation)
		}
		return Known{}, err
	}
	if trash != "" {
		_ = os.RemoveAll(trash)
	}
	return k, nil
}

// owns reports whether p is a directory wharf created under Dir.
func (m *Manager) owns(p string) bool {
	if m.opts.Dir == "" || p == "" {
		return false
	}
	rel, err := filepath.Rel(m.opts.Dir, p)
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..") && !strings.Contains(rel, string(filepath.Separator))
}

func (m *Manager) allow(src plugin.MarketplaceSource) error {
	if m.opts.Gate == nil {
		return nil
	}
	return m.opts.Gate.AllowAdd(src)
}

func (m *Manager) put(ctx context.Context, k Known, op string) error {
	stored := k
	if m.owns(k.InstallLocation) {
		stored.InstallLocation = filepath.Base(k.InstallLocation)
	}
	b, err := json.Marshal(stored)
	if err != nil {
		return err
	}
	hook := txHookOf(ctx)
	return m.st.Update(func(tx store.Tx) error {
		if err := tx.Put(Bucket, k.Name, b); err != nil {
			return err
		}
		if hook != nil {
			return hook(tx, Change{Op: op, Known: k})
		}
		return nil
	})
}

// Kinds of Change.
const (
	ChangeAdd    = "add"
	ChangeUpdate = "update"
	ChangeRemove = "remove"
)

// Change is a marketplace change about to be committed to the store.
type Change struct {
	Op    string // ChangeAdd, ChangeUpdate or ChangeRemove
	Known Known  // the record written, or the one removed
}

type txHookKey struct{}

// WithTxHook returns a context under which the Manager's Add, Update and
// Remove call hook inside the store transaction that records the change,
// so that what hook writes (an audit entry) commits with the change or not
// at all. An error from hook aborts the transaction: the store keeps the
// previous record.
func WithTxHook(ctx context.Context, hook func(store.Tx, Change) error) context.Context {
	return context.WithValue(ctx, txHookKey{}, hook)
}

func txHookOf(ctx context.Context) func(store.Tx, Change) error {
	h, _ := ctx.Value(txHookKey{}).(func(store.Tx, Change) error)
	return h
}

// fetched is a marketplace brought to local disk but not yet installed.
type fetched struct {
	tmp      string // temporary dir to swap into place; "" for local sources
	location string // for local sources: the path itself
	commit   string
	manifest *plugin.Marketplace
}

func (f *fetched) cleanup() {
	if f.tmp != "" {
		_ = os.RemoveAll(f.tmp)
	}
}

func (m *Manager) materialize(ctx context.Context, src plugin.MarketplaceSource) (*fetched, error) {
	if src.IsLocal() {
		mf, err := readManifest(manifestFile(src, src.Path))
		if err != nil {
			return nil, err
		}
		return &fetched{location: src.Path, manifest: mf}, nil
	}
	if m.opts.Dir == "" {
		return nil, errors.New("marketplace: no directory for clones configured")
	}
	if err := os.MkdirAll(m.opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", m.opts.Dir, err)
	}
	tmp, err := os.MkdirTemp(m.opts.Dir, ".tmp-")
	if err != nil {
		return nil, fmt.Errorf("create a temporary directory under %s: %w", m.opts.Dir, err)
	}
	f := &fetched{tmp: tmp}
	if src.IsGit() {
		g := m.gitClient(src)
		f.commit, err = g.clone(ctx, src, tmp)
	} else {
		err = m.download(ctx, src, tmp)
	}
	if err == nil {
		f.manifest, err = readManifest(manifestFile(src, tmp))
	}
	if err != nil {
		f.cleanup()
		return nil, err
	}
	return f, nil
}

func (m *Manager) gitClient(src plugin.MarketplaceSource) *gitClient {
	g := &gitClient{net: &m.net, progress: m.opts.Progress}
	if m.opts.ProgressBar != nil {
		g.progress, g.bar = nil, m.opts.ProgressBar
	}
	g.redirect = func(_ context.Context, u *url.URL) error {
		return m.allow(plugin.MarketplaceSource{Kind: plugin.MktGit, URL: u.String(), Ref: src.Ref, Path: src.Path})
	}
	return g
}

// allowRedirect asks the gate about the URL a marketplace.json download
// is redirected to, as the url source it now is.
func (m *Manager) allowRedirect(_ context.Context, u *url.URL) error {
	return m.allow(plugin.MarketplaceSource{Kind: plugin.MktURL, URL: u.String()})
}

// download fetches a marketplace.json URL into dir/.claude-plugin/.
func (m *Manager) download(ctx context.Context, src plugin.MarketplaceSource, dir string) error {
	fail := func(err error, hint string) error {
		return &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeSource, Object: src.URL, Err: err, Hint: hint}
	}
	h := http.Header{}
	for k, v := range src.Headers {
		h.Set(k, os.Expand(v, m.net.Getenv))
	}
	max := int64(maxManifestBytes)
	if l := m.net.MaxMetadataBytes; l > 0 && l < max {
		max = l
	}
	// The user named this URL (it is not a marketplace entry's): its host
	// is trusted as configured.
	var refused error
	ctx = fetch.WithRedirectCheck(ctx, func(ctx context.Context, u *url.URL) error {
		if err := m.allowRedirect(ctx, u); err != nil {
			refused = err
			return err
		}
		return nil
	})
	data, err := m.net.ReadAll(ctx, fetch.Get{URL: src.URL, Accept: "application/json", Header: h, Trusted: true}, max)
	if refused != nil {
		return refused
	}
	if err != nil {
		var idle *netidle.Error
		var he *fetch.HTTPError
		switch {
		case errors.As(err, &idle):
			return fail(fmt.Errorf("download: %w: %w", ErrTimeout, err), idleHint(idle))
		case errors.Is(err, fetch.ErrTimeout):
			return fail(fmt.Errorf("download: %w", err), "raise WHARF_GIT_TIMEOUT (config git-timeout) or check the network")
		case errors.As(err, &he):
			hint := "check the URL"
			if he.Code == http.StatusUnauthorized || he.Code == http.StatusForbidden {
				hint = `the server wants credentials: add them as "headers" of a {"source":"url"} entry in settings`
			}
			return fail(fmt.Errorf("download: HTTP %s", he.Status), hint)
		case errors.Is(err, fetch.ErrTooLarge):
			return fail(fmt.Errorf("download: marketplace.json is larger than %d bytes: %w", max, err), "point at a real marketplace.json")
		case errors.Is(err, fetch.ErrUnsupported):
			return fail(fmt.Errorf("download: %w", err), "use an https:// URL (plain http only to 127.0.0.1)")
		}
		return fail(fmt.Errorf("download: %w", err), "check the URL and the network")
	}
	return atomicfile.WriteFile(filepath.Join(dir, ManifestPath), data, 0o644)
}

// manifestFile is where the marketplace.json of src lives once at root.
func manifestFile(src plugin.MarketplaceSource, root string) string {
	switch {
	case src.Kind == plugin.MktFile:
		return root
	case src.IsGit() && src.Path != "":
		// The marketplace's directory (or its marketplace.json) inside the
		// repository.
		p := filepath.Join(root, filepath.FromSlash(src.Path))
		if strings.HasSuffix(strings.ToLower(p), ".json") {
			return p
		}
		return filepath.Join(p, filepath.FromSlash(ManifestPath))
	}
	return filepath.Join(root, filepath.FromSlash(ManifestPath))
}

// RootOf returns the marketplace root that relative plugin sources are
// resolved against, given its marketplace.json path.
func RootOf(manifest string) string {
	dir := filepath.Dir(manifest)
	if filepath.Base(dir) == ".claude-plugin" {
		return filepath.Dir(dir)
	}
	return dir
}

// ManifestFile returns the path of k's marketplace.json.
func (k Known) ManifestFile() string { return manifestFile(k.Source, k.InstallLocation) }

func isGitDir(dir string) bool {
	_, err := git.PlainOpen(dir)
	return err == nil
}

func revertTo(dir, commit string) error {
	repo, err := git.PlainOpen(dir)
	if err != nil {
		return err
	}
	g := &gitClient{}
	return g.resetTo(repo, plumbing.NewHash(commit))
}

// swapDir moves tmp into dst's place. An existing dst is moved aside first
// and deleted only once tmp is in place, so a failure leaves dst as it was.
func swapDir(tmp, dst string) error {
	old := ""
	if _, err := os.Lstat(dst); err == nil {
		old = dst + ".old-" + randSuffix()
		if err := os.Rename(dst, old); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		if old != "" {
			_ = os.Rename(old, dst)
		}
		return err
	}
	_ = atomicfile.SyncDir(filepath.Dir(dst)) // best effort: the swap itself is done
	if old != "" {
		_ = os.RemoveAll(old)
	}
	return nil
}

func randSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
