package etcdstore_test

import (
	"errors"
	"path/filepath"
	"strconv"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/etcdstore"
	"github.com/wharfhq/wharf/internal/testutil/etcdtest"
)

// increment is the read-modify-write every benchmark here does: the shape of
// a policy put with an expected version, or a counter.
func increment(s store.Store, key string) error {
	return s.Update(func(tx store.Tx) error {
		n := 0
		v, err := tx.Get("counters", key)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err
		default:
			n, _ = strconv.Atoi(string(v))
		}
		return tx.Put("counters", key, []byte(strconv.Itoa(n+1)))
	})
}

// stmIncrement does the same with etcd's own software transactional memory
// (concurrency.NewSTM), what a Go program talking to etcd would use instead.
func stmIncrement(cli *clientv3.Client, key string) error {
	_, err := concurrency.NewSTM(cli, func(stm concurrency.STM) error {
		n, _ := strconv.Atoi(stm.Get(key))
		stm.Put(key, strconv.Itoa(n+1))
		return nil
	}, concurrency.WithIsolation(concurrency.Serializable))
	return err
}

func BenchmarkCounterBolt(b *testing.B) {
	s, err := store.OpenBolt(filepath.Join(b.TempDir(), "state.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		if err := increment(s, "k"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCounterEtcd(b *testing.B) {
	c := etcdtest.Start(b, 1)
	s, err := etcdstore.Open(c.Endpoints(), etcdstore.Options{Prefix: "/bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.Run("wharf-store", func(b *testing.B) {
		for b.Loop() {
			if err := increment(s, "serial"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("etcd-stm", func(b *testing.B) {
		cli := c.Client()
		for b.Loop() {
			if err := stmIncrement(cli, "/bench-stm/serial"); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Contended: every goroutine increments the same key.
	b.Run("wharf-store-contended", func(b *testing.B) {
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := increment(s, "hot"); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("etcd-stm-contended", func(b *testing.B) {
		cli := c.Client()
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := stmIncrement(cli, "/bench-stm/hot"); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
