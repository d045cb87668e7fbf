package cache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gofrs/flock"

	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/plugin"
)

type lockKey struct{ home string }

// WithLock runs fn holding the exclusive writer lock of this home
// ($WHARF_HOME/.lock, see LockFile). It waits until the lock is free or ctx is
// done. fn receives a context that marks the lock as held, so cache methods
// called with it (Materialize, Put, Delete, Acquire, GC) do not try to take
// it again. Re-check any state read before the lock inside fn.
//
// The lock is advisory and per open file: it excludes other processes and
// other goroutines of this process that did not get the marked context.
func (c *Cache) WithLock(ctx context.Context, fn func(ctx context.Context) error) error {
	key := lockKey{c.home}
	if ctx.Value(key) != nil {
		return fn(ctx)
	}
	unlock, err := LockFile(ctx, layout.New(c.home).Lock())
	if err != nil {
		return err
	}
	defer unlock()
	return fn(context.WithValue(ctx, key, true))
}

// LockFile takes the exclusive lock of the file at path, creating it and
// its directory when missing, and waits until the lock is free or ctx is
// done. unlock releases it. The lock is flock(2) on Unix and LockFileEx on
// Windows (github.com/gofrs/flock), so wharf binaries of either kind on one
// home exclude each other.
func LockFile(ctx context.Context, path string) (unlock func(), err error) {
	return lockFile(ctx, path, (*flock.Flock).TryLock)
}

// RLockFile is LockFile for a shared lock: any number of holders, none
// while an exclusive holder has it.
func RLockFile(ctx context.Context, path string) (unlock func(), err error) {
	return lockFile(ctx, path, (*flock.Flock).TryRLock)
}

func lockFile(ctx context.Context, path string, try func(*flock.Flock) (bool, error)) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, errf(plugin.TypeSource, filepath.Dir(path), "check that WHARF_HOME is writable", "create %s: %w", filepath.Dir(path), err)
	}
	// Each call opens the file anew, so the lock excludes other goroutines
	// of this process as well as other processes.
	l := flock.New(path, flock.SetFlag(os.O_RDWR|os.O_CREATE), flock.SetPermissions(0o644))
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := try(l)
		if ok {
			break
		}
		if err != nil && !errors.Is(err, syscall.EINTR) {
			var pe *fs.PathError
			if errors.As(err, &pe) && pe.Op == "open" {
				return nil, errf(plugin.TypeSource, path, "check that WHARF_HOME is writable", "open lock: %w", err)
			}
			return nil, errf(plugin.TypeSource, path, "", "flock: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil, errf(plugin.TypeConflict, path, "wait for the other wharf command to finish, or stop it",
				"%w: %s is held by another wharf process: %v", ErrLocked, path, ctx.Err())
		case <-tick.C:
		}
	}
	return func() { l.Unlock() }, nil
}

// errf builds a materialization-layer error; typ is a plugin.Type* constant.
func errf(typ, object, hint, format string, args ...any) error {
	return &plugin.Error{Layer: plugin.LayerMaterialization, Type: typ, Object: object, Hint: hint,
		Err: fmt.Errorf(format, args...)}
}
