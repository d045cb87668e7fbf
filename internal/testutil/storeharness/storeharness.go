// Package storeharness runs a store contract on every backend the server
// keeps its state in: a fresh bbolt file and a real etcd server on
// 127.0.0.1 (etcdtest), each store of the latter under its own key prefix.
package storeharness

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/etcdstore"
	"github.com/wharfhq/wharf/internal/testutil/etcdtest"
)

// Backend opens stores of one kind for the subtests of one run.
type Backend struct {
	// Name is "bolt" or "etcd", the name of the subtest it runs in.
	Name  string
	open  func(t *testing.T) store.Store
	again func(t *testing.T, s store.Store) store.Store
}

// Open returns a fresh, empty store, closed when t ends.
func (b *Backend) Open(t *testing.T) store.Store {
	t.Helper()
	return b.open(t)
}

// Again returns another client of s, a store Open returned: what a second
// server replica sees. A bbolt file belongs to one process, so its replicas
// share the handle and Again returns s itself; on etcd it is a new client
// on the same prefix, closed when t ends.
func (b *Backend) Again(t *testing.T, s store.Store) store.Store {
	t.Helper()
	return b.again(t, s)
}

// Run runs fn once per backend, as the subtests "bolt" and "etcd". The etcd
// subtest starts one single-member cluster; every Open in it gets a prefix
// of its own under "/wharf-<name>/".
func Run(t *testing.T, name string, fn func(t *testing.T, b *Backend)) {
	t.Run("bolt", func(t *testing.T) { fn(t, bolt()) })
	t.Run("etcd", func(t *testing.T) { fn(t, etcd(t, name)) })
}

func bolt() *Backend {
	return &Backend{
		Name: "bolt",
		open: func(t *testing.T) store.Store {
			t.Helper()
			b, err := store.OpenBolt(filepath.Join(t.TempDir(), "contract.db"), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return b
		},
		again: func(t *testing.T, s store.Store) store.Store { return s },
	}
}

func etcd(t *testing.T, name string) *Backend {
	c := etcdtest.Start(t, 1)
	var (
		mu       sync.Mutex
		n        int
		prefixOf = map[store.Store]string{}
	)
	openAt := func(t *testing.T, prefix string) store.Store {
		t.Helper()
		e, err := etcdstore.Open(c.Endpoints(), etcdstore.Options{Prefix: prefix})
		if err != nil {
			t.Fatalf("etcdstore.Open(prefix %s): %v", prefix, err)
		}
		t.Cleanup(func() { e.Close() })
		mu.Lock()
		prefixOf[e] = prefix
		mu.Unlock()
		return e
	}
	return &Backend{
		Name: "etcd",
		open: func(t *testing.T) store.Store {
			t.Helper()
			mu.Lock()
			n++
			prefix := fmt.Sprintf("/wharf-%s/%d", name, n)
			mu.Unlock()
			return openAt(t, prefix)
		},
		again: func(t *testing.T, s store.Store) store.Store {
			t.Helper()
			mu.Lock()
			prefix, ok := prefixOf[s]
			mu.Unlock()
			if !ok {
				t.Fatalf("storeharness: Again(%T): not a store this backend opened", s)
			}
			return openAt(t, prefix)
		},
	}
}
