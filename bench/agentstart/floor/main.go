// Command floor is the floor of a trusted cache-only session start, as a
// whole process: it reads a home's installed registry and checks every
// plugin tree's stat fingerprint (what no cache-only load can skip), and
// nothing else. It exits 1 if a tree fails its check.
//
// Usage: floor -home DIR
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/trust"
)

func main() {
	home := flag.String("home", "", "the wharf home")
	flag.Parse()
	if err := run(*home); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(home string) error {
	st, err := store.OpenBolt(layout.New(home).StateDB(), store.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer st.Close()
	c, err := cache.New(cache.Options{Home: home, Store: st})
	if err != nil {
		return err
	}
	recs, err := c.List()
	if err != nil {
		return err
	}
	checks := make([]trust.FPCheck, len(recs))
	for i, r := range recs {
		checks[i] = trust.FPCheck{Root: r.InstallPath, FP: r.Fingerprint}
	}
	for _, err := range trust.CheckFingerprints(checks) {
		if err != nil {
			return err
		}
	}
	fmt.Println(len(recs), "trees checked")
	return nil
}
