package main

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// managedDir is the system managed directory (settings.SystemManagedDir):
// nothing in the environment or on the command line moves it.
func (a *app) managedDir() string { return settings.SystemManagedDir }

// extraManagedDir is WHARF_MANAGED_DIR: a managed directory read after the
// system one, which can only tighten; "" for none.
func (a *app) extraManagedDir() string {
	return settings.ExtraManagedDir(os.Getenv("WHARF_MANAGED_DIR"))
}

// policySources are the managed directories and the --policy paths.
func (a *app) policySources() policy.Sources {
	return policy.Sources{ManagedDir: a.managedDir(), ExtraManagedDir: a.extraManagedDir(), Paths: a.policyPaths}
}

// Policy compiles the managed layers and the --policy layers on first use.
func (a *app) Policy() (*policy.Engine, error) {
	if a.pol != nil {
		return a.pol, nil
	}
	e, err := a.openPolicy(a.policySources())
	if err != nil {
		return nil, err
	}
	for _, w := range e.Warnings() {
		a.warnf("policy: %s", w)
	}
	a.pol = e
	return e, nil
}

// marketGate returns the gate marketplace add and update consult: a gate
// set by a test, else policy.
func (a *app) marketGate() marketplace.Gate {
	if a.gate != nil {
		return a.gate
	}
	return policyGate{a}
}

// warnf prints a warning to stderr (also under --json: stdout stays JSON).
func (a *app) warnf(format string, args ...any) {
	fmt.Fprintf(a.stderr, "wharf: warning: %s\n", plainMessage(fmt.Sprintf(format, args...)))
}

// policyGate lets policy refuse a marketplace source before wharf touches
// the network or disk for it.
type policyGate struct{ a *app }

func (g policyGate) AllowAdd(src plugin.MarketplaceSource) error {
	e, err := g.a.Policy()
	if err != nil {
		return err
	}
	// The marketplace's own name is only known after its manifest is read;
	// until then it goes by the last element of where it comes from.
	label := strings.TrimSuffix(path.Base(strings.TrimRight(src.String(), "/")), ".git")
	return e.AllowAdd(context.Background(), label, src)
}

// knownMarketSource returns a known marketplace's source, for policy
// requests; nil when the marketplace is not known.
func (a *app) knownMarketSource(name string) *plugin.MarketplaceSource {
	mgr, err := a.Marketplaces()
	if err != nil {
		return nil
	}
	k, err := mgr.Get(name)
	if err != nil {
		return nil
	}
	return &k.Source
}
