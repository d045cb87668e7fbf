package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/plugin"
)

// Lease is held by a running agent session on the version directories it
// uses; GC never removes a leased directory. A lease is a file
// $WHARF_HOME/leases/<pid>-<n>.json; it is stale (ignored and removed by GC)
// once its process is gone, so a crashed session leaks nothing.
type Lease struct {
	PID       int       `json:"pid"`
	Paths     []string  `json:"paths"`
	CreatedAt time.Time `json:"createdAt"`
	file      string
}

// File is the lease's path.
func (l *Lease) File() string { return l.file }

func (c *Cache) leaseDir() string { return layout.New(c.home).Leases() }

// Acquire leases the given version directories for this process. It takes
// the lock, so it cannot interleave with GC: every path must still exist
// when the lease is written, or Acquire fails and writes nothing.
func (c *Cache) Acquire(ctx context.Context, paths ...string) (*Lease, error) {
	clean := make([]string, 0, len(paths))
	for _, p := range paths {
		if _, ok := c.inCache(p); !ok {
			return nil, errf(plugin.TypeSource, p, "lease only version directories under "+c.root,
				"%w: %s is not a cache version directory", ErrInvalid, p)
		}
		clean = append(clean, filepath.Clean(p))
	}
	l := &Lease{PID: os.Getpid(), Paths: clean, CreatedAt: c.now().UTC()}
	err := c.WithLock(ctx, func(ctx context.Context) error {
		for _, p := range clean {
			if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
				return errf(plugin.TypeNotFound, p, "reload to pick up the installed versions",
					"%w: version directory %s is gone", ErrNotInstalled, p)
			}
		}
		dir := c.leaseDir()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		b, err := json.MarshalIndent(l, "", "  ")
		if err != nil {
			return err
		}
		f, err := os.CreateTemp(dir, strconv.Itoa(l.PID)+"-*.json.tmp")
		if err != nil {
			return err
		}
		_, err = f.Write(append(b, '\n'))
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		final := strings.TrimSuffix(f.Name(), ".tmp")
		if err == nil {
			err = os.Rename(f.Name(), final)
		}
		if err != nil {
			os.Remove(f.Name())
			return err
		}
		l.file = final
		return syncPath(dir)
	})
	if err != nil {
		var pe *plugin.Error
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, errf(plugin.TypeSource, c.leaseDir(), "check that WHARF_HOME is writable", "write lease: %w", err)
	}
	return l, nil
}

// Release drops the lease. Releasing twice is not an error.
func (l *Lease) Release() error {
	if l == nil || l.file == "" {
		return nil
	}
	err := os.Remove(l.file)
	if isNotExist(err) {
		err = nil
	}
	l.file = ""
	return err
}

// Leases returns the leases of live processes. With removeStale it deletes
// the files of dead ones (call it under the lock).
func (c *Cache) Leases(removeStale bool) ([]Lease, error) {
	ents, err := os.ReadDir(c.leaseDir())
	if isNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Lease
	for _, e := range ents {
		name := e.Name()
		p := filepath.Join(c.leaseDir(), name)
		if !strings.HasSuffix(name, ".json") {
			// A .json.tmp left by a crash during Acquire.
			if pid, ok := leasePID(name); removeStale && ok && !pidAlive(pid) {
				os.Remove(p)
			}
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var l Lease
		if err := json.Unmarshal(b, &l); err != nil || l.PID <= 0 {
			// An unreadable lease cannot be attributed; keep honoring it by
			// its file name's PID, or drop it if that process is gone.
			pid, ok := leasePID(name)
			if ok && pidAlive(pid) {
				return nil, fmt.Errorf("lease %s is not valid JSON while process %d is alive: %v", p, pid, err)
			}
			if removeStale {
				os.Remove(p)
			}
			continue
		}
		if !pidAlive(l.PID) {
			if removeStale {
				os.Remove(p)
			}
			continue
		}
		l.file = p
		out = append(out, l)
	}
	return out, nil
}

func leasePID(name string) (int, bool) {
	s, _, ok := strings.Cut(name, "-")
	if !ok {
		s = strings.TrimSuffix(name, ".json")
	}
	pid, err := strconv.Atoi(s)
	return pid, err == nil && pid > 0
}
