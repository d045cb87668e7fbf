package install

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/client/load"
	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// Policy is what the installer asks before it changes anything, and what
// List's load pass asks (Decide, Version). *policy.Engine implements it.
// Implementations must be safe for concurrent use.
type Policy interface {
	load.Policy
	AllowInstall(ctx context.Context, closure []policy.InstallItem) error
	AllowUninstall(ctx context.Context, id plugin.ID) error
	AllowEnable(ctx context.Context, id plugin.ID, src *plugin.MarketplaceSource) error
	AllowDisable(ctx context.Context, id plugin.ID) error
	AllowLoad(ctx context.Context, id plugin.ID, src *plugin.MarketplaceSource) error
	AllowCross(from, to plugin.ID) error
	Forced(ctx context.Context, id plugin.ID) (string, error)
}

// Options configure an Installer. Marketplaces, Cache and Settings are required.
type Options struct {
	Marketplaces *marketplace.Manager
	Cache        *cache.Cache
	Fetcher      *source.Fetcher // nil: one configured by the environment alone (fetch.FromEnv)
	// Policy is consulted before every change; nil allows everything.
	Policy Policy
	// Settings says where each scope's settings file is.
	Settings settings.Paths
	// FlagSettings is the flag scope's settings document (may be nil).
	FlagSettings []byte
	// Keys are the public keys trusted to sign plugin digests.
	Keys trust.Keyring
	// Progress receives one line per step; nil is silent.
	Progress io.Writer
	// ProgressBar is a terminal on which an install of several plugins
	// draws a count bar; nil draws none.
	ProgressBar io.Writer
	// AcceptedFile, on a client without a policy server, is where the
	// versions a user accepted with their added capabilities are recorded;
	// set, an update that adds capabilities needs UpdateOptions.Accept
	// (admission.go). Empty: no such gate (a policy server's admissions
	// decide).
	AcceptedFile string
	// Getenv is passed to marketplace source resolution; nil is os.Getenv.
	Getenv func(string) string
	Now    func() time.Time
}

// Installer runs install use cases on one wharf home. It is meant for one
// command at a time; across processes the home's lock serializes writes.
type Installer struct {
	o Options
	// contents keeps the capability sets of the trees installed, by
	// content digest, for policy here and at every later load.
	contents *load.Contents
}

// New returns an Installer.
func New(o Options) (*Installer, error) {
	if o.Marketplaces == nil || o.Cache == nil {
		return nil, errors.New("install: Options.Marketplaces and Options.Cache are required")
	}
	if o.Fetcher == nil {
		cfg, err := fetch.FromEnv(nil)
		if err != nil {
			return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeSource, Object: "environment",
				Err: err, Hint: "fix the WHARF_* variable the message names"}
		}
		o.Fetcher = source.NewFetcher(cfg)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Installer{o: o, contents: load.NewContents(layout.New(o.Cache.Home()).Capabilities())}, nil
}

func (in *Installer) progress(format string, args ...any) {
	if in.o.Progress != nil {
		fmt.Fprintf(in.o.Progress, format+"\n", args...)
	}
}

// marketSource is a known marketplace's source, which policy matches
// against.
func marketSource(k marketplace.Known) *plugin.MarketplaceSource {
	s := k.Source
	return &s
}

// allowCross adapts Policy to resolver.CrossPolicy.
type allowCross struct{ p Policy }

func (a allowCross) AllowCross(from, to plugin.ID) error { return a.p.AllowCross(from, to) }
