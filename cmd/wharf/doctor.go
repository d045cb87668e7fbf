package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/plugin"
)

// Error types of the state file, as they appear in --json output.
const (
	typeStoreDamaged    = home.TypeStoreDamaged
	typeStorePermission = home.TypeStorePermission
	typeStoreLocked     = home.TypeStoreLocked
)

// storeOpenError is what a command says when state.db cannot be opened
// (home.StoreOpenError).
func storeOpenError(env Env, err error) error { return home.StoreOpenError(env, err) }

// doctorReport is what `wharf doctor` found and, with --repair, did.
type doctorReport struct {
	StateDB string `json:"stateDB"`
	// Status is ok, missing (no state.db yet) or damaged.
	Status   string   `json:"status"`
	Damage   string   `json:"damage,omitempty"`
	Problems []string `json:"problems"`
	// Records counts the registry records that decode; Broken lists the
	// ones that do not, with the way out.
	Records int            `json:"records"`
	Broken  []doctorBroken `json:"broken"`
	// Lost are the store's buckets that could not be read.
	Lost map[string]string `json:"lost,omitempty"`

	Repaired  bool             `json:"repaired"`
	KeptAside string           `json:"keptAside,omitempty"`
	Restored  []cache.Restored `json:"restored,omitempty"`
	// Unrestored says what a repair could not bring back.
	Unrestored []string `json:"unrestored,omitempty"`
}

type doctorBroken struct {
	Key   string `json:"key"`
	Error string `json:"error"`
	Hint  string `json:"hint"`
}

// DoctorOptions are wharf doctor's inputs.
type DoctorOptions struct {
	IO   streams
	Home *home.Home
	// Repair rebuilds state.db when it is damaged (--repair).
	Repair bool
}

func newDoctorCmd(a *app) *cobra.Command {
	opts := &DoctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor [--repair]",
		Short: "Check wharf's state file and installed registry; --repair rebuilds them from the plugin cache",
		Long: `Doctor checks state.db (the bbolt file of known marketplaces and the installed
registry) and every registry record, without changing anything, and exits 1
when something is damaged.

With --repair it rebuilds state.db: every bucket that can still be read is
copied, registry records that decode are kept, and a plugin whose record is
damaged (or every plugin, when the registry cannot be read) is restored from
its sealed version directory under cache/, its digest computed from that
content. The damaged file is kept next to it as state.db.damaged-<time>; the
new one replaces it only once complete. A permission problem is reported as
such and nothing is moved.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.Home = a.io(), a.h
			return runDoctor(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Repair, "repair", false, "rebuild state.db from what can be read of it and from the plugin cache, keeping the damaged file aside")
	return cmd
}

// runDoctor checks the state and, with Repair, rebuilds it; it prints what
// it found and did, and a damage left unrepaired is an error (exit 1).
func runDoctor(ctx context.Context, opts *DoctorOptions) error {
	d := doctor{env: opts.Home.Paths(), lockTimeout: opts.Home.Config().LockTimeout}
	rep, err := d.run(ctx, opts.Repair)
	if err != nil {
		return err
	}
	if opts.IO.JSON {
		if err := opts.IO.printJSON(rep); err != nil {
			return err
		}
	} else {
		printDoctor(opts.IO, rep)
	}
	if rep.Status == "damaged" && !rep.Repaired {
		return &plugin.Error{Layer: plugin.LayerMaterialization, Type: typeStoreDamaged, Object: rep.StateDB,
			Err: errors.New("wharf's state is damaged (see above)"), Hint: "run: wharf doctor --repair"}
	}
	return nil
}

// doctor is what wharf doctor reads and writes: the home's paths and how
// long to wait for state.db's lock.
type doctor struct {
	env         Env
	lockTimeout time.Duration
}

// run examines the state and, with repair, rebuilds it under the home's
// lock (no install or GC runs meanwhile).
func (d doctor) run(ctx context.Context, repair bool) (*doctorReport, error) {
	c, err := cache.New(cache.Options{Home: d.env.Home()})
	if err != nil {
		return nil, err
	}
	if !repair {
		rep, _, err := d.examine()
		return rep, err
	}
	var rep *doctorReport
	err = c.WithLock(ctx, func(ctx context.Context) error {
		var sv *store.Salvaged
		var err error
		rep, sv, err = d.examine()
		if err != nil {
			return err
		}
		if rep.Status == "ok" {
			return nil
		}
		if rep.Status == "missing" && !hasCachedPlugins(d.env.Cache()) {
			return nil
		}
		return d.rebuild(ctx, rep, sv)
	})
	return rep, err
}

// examine reads what it can of state.db and checks the registry records.
// sv is nil when there is no state.db.
func (d doctor) examine() (*doctorReport, *store.Salvaged, error) {
	path := d.env.StateDB()
	rep := &doctorReport{StateDB: path, Status: "ok", Problems: []string{}, Broken: []doctorBroken{}}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		rep.Status = "missing"
		return rep, nil, nil
	}
	sv, err := store.Salvage(path, d.lockTimeout)
	if err != nil {
		return nil, nil, storeOpenError(d.env, err)
	}
	if sv.Damage != nil {
		rep.Damage = sv.Damage.Error()
	}
	rep.Problems = append(rep.Problems, sv.Problems...)
	if len(sv.Lost) > 0 {
		rep.Lost = sv.Lost
	}
	c, err := cache.New(cache.Options{Home: d.env.Home()})
	if err != nil {
		return nil, nil, err
	}
	for _, kv := range sv.Buckets[cache.BucketInstalled] {
		if err := c.CheckStoredRecord(kv); err != nil {
			rep.Broken = append(rep.Broken, doctorBroken{Key: kv.Key, Error: plainMessage(err.Error()), Hint: plugin.HintOf(err)})
			continue
		}
		rep.Records++
	}
	if sv.Damage != nil || len(sv.Lost) > 0 || len(sv.Problems) > 0 || len(rep.Broken) > 0 {
		rep.Status = "damaged"
	}
	return rep, sv, nil
}

// rebuild writes a new state.db from sv (nil: none) and the cache, then
// puts it in place of the old one, which it keeps aside.
func (d doctor) rebuild(ctx context.Context, rep *doctorReport, sv *store.Salvaged) error {
	path := d.env.StateDB()
	c, err := cache.New(cache.Options{Home: d.env.Home()})
	if err != nil {
		return err
	}
	readable := sv != nil && sv.Lost[""] == "" && sv.Lost[cache.BucketInstalled] == ""
	var installed, orphans []store.KV
	if sv != nil {
		installed, orphans = sv.Buckets[cache.BucketInstalled], sv.Buckets[cache.BucketOrphans]
	}
	restored, problems := c.RebuildRegistry(installed, readable, orphans)
	rep.Unrestored = append(rep.Unrestored, problems...)

	fresh := path + ".rebuild-" + strconv.Itoa(os.Getpid())
	os.Remove(fresh)
	defer os.Remove(fresh)
	nb, err := store.OpenBolt(fresh, store.Options{LockTimeout: d.lockTimeout})
	if err != nil {
		return storeOpenError(d.env, err)
	}
	keep := map[string]bool{}
	var derived []cache.Record
	for _, r := range restored {
		if r.From == "registry" {
			keep[r.Record.ID.String()] = true
		} else {
			derived = append(derived, r.Record)
		}
	}
	err = nb.Update(func(tx store.Tx) error {
		if sv == nil {
			return nil
		}
		for bucket, kvs := range sv.Buckets {
			for _, kv := range kvs {
				if bucket == cache.BucketInstalled && !keep[kv.Key] {
					continue
				}
				if err := tx.Put(bucket, kv.Key, kv.Value); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err == nil && len(derived) > 0 {
		nc, cerr := cache.New(cache.Options{Home: d.env.Home(), Store: nb})
		if cerr != nil {
			err = cerr
		} else {
			err = nc.PutAll(ctx, derived)
		}
	}
	if cerr := nb.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &plugin.Error{Layer: plugin.LayerMaterialization, Type: typeStoreDamaged, Object: path,
			Err: fmt.Errorf("writing the rebuilt state: %w", err), Hint: "nothing was replaced; check free space and permissions of " + d.env.Home()}
	}
	if sv != nil {
		rep.KeptAside = asideName(path)
	}
	if err := store.ReplaceFile(path, fresh, rep.KeptAside, d.lockTimeout); err != nil {
		return storeOpenError(d.env, err)
	}
	rep.Repaired = true
	rep.Restored = restored
	if sv != nil {
		for bucket, why := range sv.Lost {
			if bucket == "" {
				bucket = "every bucket"
			}
			rep.Unrestored = append(rep.Unrestored, fmt.Sprintf("%s could not be read (%s)", bucket, why))
		}
	}
	if sv == nil || sv.Lost[""] != "" || sv.Lost[marketplace.Bucket] != "" {
		msg := "the known marketplaces could not be recovered; add them again: wharf marketplace add <source>"
		if names := dirNames(d.env.Marketplaces()); len(names) > 0 {
			msg += fmt.Sprintf(" (clones of %v are under %s)", names, d.env.Marketplaces())
		}
		rep.Unrestored = append(rep.Unrestored, msg)
	}
	sort.Strings(rep.Unrestored)
	return nil
}

// asideName is where the damaged file is kept: next to it, stamped with the
// time of the repair.
func asideName(path string) string {
	base := path + ".damaged-" + time.Now().UTC().Format("20060102T150405Z")
	name := base
	for i := 1; ; i++ {
		if _, err := os.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			return name
		}
		name = base + "-" + strconv.Itoa(i)
	}
}

func dirNames(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if e.IsDir() && e.Name()[0] != '.' {
			out = append(out, e.Name())
		}
	}
	return out
}

// hasCachedPlugins reports whether the cache holds any plugin directory.
func hasCachedPlugins(root string) bool {
	m, _ := filepath.Glob(filepath.Join(root, "*", "*", "*"))
	return len(m) > 0
}

func printDoctor(out streams, rep *doctorReport) {
	switch rep.Status {
	case "missing":
		out.printf("%s: does not exist (nothing installed yet)\n", rep.StateDB)
	case "ok":
		out.printf("%s: ok, %d installed plugin record(s)\n", rep.StateDB, rep.Records)
	default:
		out.printf("%s: damaged\n", rep.StateDB)
	}
	if rep.Damage != "" {
		out.printf("  %s\n", rep.Damage)
	}
	for _, p := range rep.Problems {
		out.printf("  check: %s\n", p)
	}
	for _, l := range store.LostLines(rep.Lost) {
		out.printf("  unreadable: %s\n", l)
	}
	for _, b := range rep.Broken {
		out.printf("  damaged record %s: %s\n    try: %s\n", b.Key, b.Error, b.Hint)
	}
	if rep.KeptAside != "" {
		out.printf("kept the old file as %s\n", rep.KeptAside)
	}
	for _, r := range rep.Restored {
		out.printf("restored %s %s (from the %s)\n", r.Record.ID, r.Record.Version, r.From)
	}
	for _, u := range rep.Unrestored {
		out.printf("not restored: %s\n", u)
	}
	if rep.Repaired {
		out.printf("rebuilt %s; check it with: wharf list\n", rep.StateDB)
	} else if rep.Status == "ok" || rep.Status == "missing" {
		out.printf("nothing to repair\n")
	}
}
