package cache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/wharfhq/wharf/plugin"
)

type lockKey struct{ home string }

// WithLock runs fn holding the exclusive writer lock of this home
// ($WHARF_HOME/.lock, flock). It waits until the lock is free or ctx is
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
	if err := os.MkdirAll(c.home, 0o755); err != nil {
		return errf(plugin.TypeSource, c.home, "check that WHARF_HOME is writable", "create %s: %w", c.home, err)
	}
	path := filepath.Join(c.home, ".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return errf(plugin.TypeSource, path, "check that WHARF_HOME is writable", "open lock: %w", err)
	}
	defer f.Close()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return errf(plugin.TypeSource, path, "", "flock: %w", err)
		}
		select {
		case <-ctx.Done():
			return errf(plugin.TypeConflict, path, "wait for the other wharf command to finish, or stop it",
				"%w: %s is held by another wharf process: %v", ErrLocked, path, ctx.Err())
		case <-tick.C:
		}
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return fn(context.WithValue(ctx, key, true))
}

// errf builds a materialization-layer error; typ is a plugin.Type* constant.
func errf(typ, object, hint, format string, args ...any) error {
	return &plugin.Error{Layer: plugin.LayerMaterialization, Type: typ, Object: object, Hint: hint,
		Err: fmt.Errorf(format, args...)}
}
