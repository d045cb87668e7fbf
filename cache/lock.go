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
	unlock, err := LockFile(ctx, filepath.Join(c.home, ".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	return fn(context.WithValue(ctx, key, true))
}

// LockFile takes the exclusive lock (flock) of the file at path, creating
// it and its directory when missing, and waits until the lock is free or
// ctx is done. unlock releases it.
func LockFile(ctx context.Context, path string) (unlock func(), err error) {
	return lockFile(ctx, path, syscall.LOCK_EX)
}

// RLockFile is LockFile for a shared lock: any number of holders, none
// while an exclusive holder has it.
func RLockFile(ctx context.Context, path string) (unlock func(), err error) {
	return lockFile(ctx, path, syscall.LOCK_SH)
}

func lockFile(ctx context.Context, path string, how int) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, errf(plugin.TypeSource, filepath.Dir(path), "check that WHARF_HOME is writable", "create %s: %w", filepath.Dir(path), err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, errf(plugin.TypeSource, path, "check that WHARF_HOME is writable", "open lock: %w", err)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, errf(plugin.TypeSource, path, "", "flock: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, errf(plugin.TypeConflict, path, "wait for the other wharf command to finish, or stop it",
				"%w: %s is held by another wharf process: %v", ErrLocked, path, ctx.Err())
		case <-tick.C:
		}
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// errf builds a materialization-layer error; typ is a plugin.Type* constant.
func errf(typ, object, hint, format string, args ...any) error {
	return &plugin.Error{Layer: plugin.LayerMaterialization, Type: typ, Object: object, Hint: hint,
		Err: fmt.Errorf(format, args...)}
}
