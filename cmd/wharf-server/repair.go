package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/serverhome"
	"github.com/wharfhq/wharf/plugin"
)

// The server's own check and repair of its bbolt store (--data). They work
// on the file while no server has it open: bbolt's lock keeps them apart.

// typeStoreDamaged is a damaged server.db.
const typeStoreDamaged = serverhome.TypeStoreDamaged

// storeReport is what check and repair print (--json).
type storeReport struct {
	Store  string `json:"store"`
	Status string `json:"status"` // ok, damaged or missing
	// Damage is the structural check's verdict; Lost the buckets that
	// could not be read ("" is the whole file); Problems what bbolt's own
	// check found in a file whose structure is sound.
	Damage   string            `json:"damage,omitempty"`
	Lost     map[string]string `json:"lost,omitempty"`
	Problems []string          `json:"problems,omitempty"`
	// Buckets counts the keys read of each bucket.
	Buckets   map[string]int `json:"buckets"`
	Repaired  bool           `json:"repaired"`
	KeptAside string         `json:"keptAside,omitempty"`
}

func dataFlag(cmd *cobra.Command, data *string) {
	cmd.Flags().StringVar(data, "data", "", "server data directory (default $WHARF_HOME/server)")
}

func (a *app) dataDir(data string) (string, error) {
	return serverhome.DataDir(a.cfg.Home, data)
}

func newCheckCmd(a *app) *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "check [--data DIR]",
		Short: "Check the server's bbolt store (server.db in --data) without changing it",
		Long: "Read every bucket of <data>/server.db and check its structure, without writing to it.\n" +
			"Run it while the server is stopped (the server holds the file's lock). Exit 0 when the\n" +
			"store is sound or absent, 1 when it is damaged (then: wharf-server repair).\n" +
			"An etcd store (--store etcd://...) is checked with etcd's own tools (etcdctl check).",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := a.dataDir(data)
			if err != nil {
				return err
			}
			rep, _, err := a.examineStore(dir)
			if err != nil {
				return err
			}
			if err := a.printStoreReport(rep); err != nil {
				return err
			}
			if rep.Status == "damaged" {
				return &plugin.Error{Layer: plugin.LayerMaterialization, Type: typeStoreDamaged, Object: rep.Store,
					Err: errors.New("the server's store is damaged (see above)"), Hint: repairHint(dir)}
			}
			return nil
		},
	}
	dataFlag(cmd, &data)
	return cmd
}

func newRepairCmd(a *app) *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "repair [--data DIR]",
		Short: "Rebuild a damaged server.db from what can be read of it, keeping the damaged file aside",
		Long: "Read what can be read of <data>/server.db, write it to a new file and put that in\n" +
			"place of the old one, which is kept beside it as server.db.damaged-<time>. A sound store\n" +
			"is left as it is. Run it while the server is stopped. What could not be read is listed:\n" +
			"a lost api-tokens bucket means a new admin token at the next start (printed once, or\n" +
			"WHARF_BOOTSTRAP_TOKEN); a lost api-settings bucket a new bundle signing key, which\n" +
			"clients must be given again.",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := a.dataDir(data)
			if err != nil {
				return err
			}
			rep, sv, err := a.examineStore(dir)
			if err != nil {
				return err
			}
			if rep.Status == "damaged" {
				if err := a.rebuildStore(rep, sv); err != nil {
					return err
				}
			}
			return a.printStoreReport(rep)
		},
	}
	dataFlag(cmd, &data)
	return cmd
}

func repairHint(dir string) string { return serverhome.RepairHint(dir) }

// examineStore reads what it can of <dir>/server.db. sv is nil when there
// is none.
func (a *app) examineStore(dir string) (*storeReport, *store.Salvaged, error) {
	path := serverhome.BoltPath(dir)
	rep := &storeReport{Store: path, Status: "ok", Buckets: map[string]int{}}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		rep.Status = "missing"
		return rep, nil, nil
	}
	sv, err := store.Salvage(path, a.cfg.LockTimeout)
	if err != nil {
		hint := "check the owner and mode of " + path
		if errors.Is(err, store.ErrLocked) {
			hint = "a wharf-server is running on " + dir + "; stop it first"
		}
		return nil, nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: typeStoreDamaged, Object: path, Err: err, Hint: hint}
	}
	if sv.Damage != nil {
		var ce *store.CorruptError
		if errors.As(sv.Damage, &ce) {
			rep.Damage = ce.Reason
		} else {
			rep.Damage = sv.Damage.Error()
		}
	}
	if len(sv.Lost) > 0 {
		rep.Lost = sv.Lost
	}
	rep.Problems = sv.Problems
	for b, kvs := range sv.Buckets {
		rep.Buckets[b] = len(kvs)
	}
	if sv.Damage != nil || len(sv.Lost) > 0 || len(sv.Problems) > 0 {
		rep.Status = "damaged"
	}
	return rep, sv, nil
}

// rebuildStore writes what sv holds to a new bbolt file and puts it in
// place of the damaged one, which it keeps aside.
func (a *app) rebuildStore(rep *storeReport, sv *store.Salvaged) error {
	path := rep.Store
	fresh := path + ".repair-" + strconv.Itoa(os.Getpid())
	os.Remove(fresh)
	defer os.Remove(fresh)
	nb, err := store.OpenBolt(fresh, store.Options{LockTimeout: a.cfg.LockTimeout})
	if err != nil {
		return &plugin.Error{Layer: plugin.LayerMaterialization, Type: typeStoreDamaged, Object: fresh, Err: err,
			Hint: "nothing was replaced; check free space and permissions of " + filepath.Dir(path)}
	}
	names := make([]string, 0, len(sv.Buckets))
	for b := range sv.Buckets {
		names = append(names, b)
	}
	sort.Strings(names)
	err = nb.Update(func(tx store.Tx) error {
		for _, b := range names {
			for _, kv := range sv.Buckets[b] {
				if err := tx.Put(b, kv.Key, kv.Value); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if cerr := nb.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &plugin.Error{Layer: plugin.LayerMaterialization, Type: typeStoreDamaged, Object: fresh,
			Err: fmt.Errorf("writing the rebuilt store: %w", err), Hint: "nothing was replaced; check free space and permissions of " + filepath.Dir(path)}
	}
	rep.KeptAside = asideName(path)
	if err := store.ReplaceFile(path, fresh, rep.KeptAside, a.cfg.LockTimeout); err != nil {
		rep.KeptAside = ""
		return &plugin.Error{Layer: plugin.LayerMaterialization, Type: typeStoreDamaged, Object: path, Err: err,
			Hint: "stop wharf-server first; nothing was replaced"}
	}
	rep.Repaired = true
	return nil
}

// asideName is where the damaged file is kept: next to it, stamped with
// the time of the repair.
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

func (a *app) printStoreReport(rep *storeReport) error {
	if a.cfg.JSON {
		return a.printJSON(rep)
	}
	switch rep.Status {
	case "missing":
		a.printf("%s: no store yet (the server creates it at its first start)\n", rep.Store)
		return nil
	case "ok":
		a.printf("%s: ok (%d buckets)\n", rep.Store, len(rep.Buckets))
		return nil
	}
	a.printf("%s: damaged\n", rep.Store)
	if rep.Damage != "" {
		a.printf("  damage: %s\n", rep.Damage)
	}
	for _, p := range rep.Problems {
		a.printf("  problem: %s\n", p)
	}
	for _, l := range store.LostLines(rep.Lost) {
		a.printf("  unreadable: %s\n", l)
	}
	keys := 0
	for _, n := range rep.Buckets {
		keys += n
	}
	if rep.Repaired {
		a.printf("repaired: %d buckets (%d keys) written to a new %s; the damaged file is kept as %s\n",
			len(rep.Buckets), keys, filepath.Base(rep.Store), rep.KeptAside)
	} else {
		a.printf("readable: %d buckets (%d keys); to rebuild the store from them: wharf-server repair --data %s\n",
			len(rep.Buckets), keys, filepath.Dir(rep.Store))
	}
	return nil
}
