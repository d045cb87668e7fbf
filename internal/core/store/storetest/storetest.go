// Package storetest is the contract every store backend keeps. A backend's
// test calls Run with a function that opens a fresh, empty store (and
// registers its Close with t.Cleanup); a backend that several processes
// share also calls RunReplicas, whose tests race separate clients.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
)

// Opener returns a fresh, empty store; it registers the store's Close with
// t.Cleanup.
type Opener func(t *testing.T) store.Store

// watchWait bounds how long a test waits for a watch event before it fails
// instead of hanging; events normally arrive in milliseconds.
const watchWait = 10 * time.Second

// Run runs the single-client contract.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"PutGetOverwrite", testPutGetOverwrite},
		{"NotFound", testNotFound},
		{"DeleteMissingIsNoError", testDeleteMissing},
		{"ListOrderAndPrefix", testListOrderAndPrefix},
		{"ListAfterPages", testListAfter},
		{"BucketsAreIsolated", testBucketsIsolated},
		{"EmptyNamesRejected", testEmptyNames},
		{"ValuesAreCopies", testValuesAreCopies},
		{"EmptyValue", testEmptyValue},
		{"ReadYourWrites", testReadYourWrites},
		{"GetManyAcrossBuckets", testGetMany},
		{"RollbackOnError", testRollback},
		{"LargeTransaction", testLargeTransaction},
		{"NextSequenceStartsAtOnePerBucket", testSequencePerBucket},
		{"NextSequenceRollsBackWithTx", testSequenceRollback},
		{"NextSequenceConcurrentGapFree", func(t *testing.T, open Opener) {
			s := open(t)
			testSequenceConcurrent(t, func(int) store.Store { return s })
		}},
		{"CounterConcurrent", func(t *testing.T, open Opener) {
			s := open(t)
			testCounter(t, func(int) store.Store { return s })
		}},
		{"CompareAndSwapOneWinner", func(t *testing.T, open Opener) {
			s := open(t)
			testCASRace(t, func(int) store.Store { return s })
		}},
		{"CompareAndSwapHelper", testCASHelper},
		{"TransfersKeepTotal", func(t *testing.T, open Opener) {
			s := open(t)
			testTransfers(t, func(int) store.Store { return s })
		}},
		{"WatchPutAndDelete", testWatch},
		{"WatchEndsWithContext", testWatchCancel},
		{"WatchInCommitOrder", testWatchOrder},
		{"WatchProgressFollowsCommits", testWatchProgress},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

// Shared opens one more client on the same shared state. NewShared returns
// a Shared for fresh, empty state.
type Shared func(t *testing.T) store.Store

// RunReplicas runs the multi-client contract: every racer uses its own
// client, as separate wharf servers would.
func RunReplicas(t *testing.T, newShared func(t *testing.T) Shared) {
	clients := func(t *testing.T, n int) func(int) store.Store {
		open := newShared(t)
		cs := make([]store.Store, n)
		for i := range cs {
			cs[i] = open(t)
		}
		return func(i int) store.Store { return cs[i%n] }
	}
	t.Run("NextSequenceGapFree", func(t *testing.T) { testSequenceConcurrent(t, clients(t, 4)) })
	t.Run("CounterExact", func(t *testing.T) { testCounter(t, clients(t, 4)) })
	t.Run("CompareAndSwapOneWinner", func(t *testing.T) { testCASRace(t, clients(t, 4)) })
	t.Run("TransfersKeepTotal", func(t *testing.T) { testTransfers(t, clients(t, 3)) })
	t.Run("WatchSeesOtherReplica", func(t *testing.T) {
		c := clients(t, 2)
		w, ok := c(0).(store.Watcher)
		if !ok {
			t.Skip("backend does not implement store.Watcher")
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ch, err := w.Watch(ctx, "tokens")
		if err != nil {
			t.Fatal(err)
		}
		mustPut(t, c(1), "tokens", "tok1", "revoked")
		ev := nextEvent(t, ch)
		if ev.Key != "tok1" || string(ev.Value) != "revoked" || ev.Deleted {
			t.Fatalf("event = %+v, want put tok1=revoked", ev)
		}
	})
}

func mustPut(t *testing.T, s store.Store, bucket, key, value string) {
	t.Helper()
	if err := s.Update(func(tx store.Tx) error { return tx.Put(bucket, key, []byte(value)) }); err != nil {
		t.Fatalf("put %s/%s: %v", bucket, key, err)
	}
}

func get(t *testing.T, s store.Store, bucket, key string) ([]byte, error) {
	t.Helper()
	var v []byte
	err := s.View(func(r store.Reader) error {
		var err error
		v, err = r.Get(bucket, key)
		return err
	})
	return v, err
}

func mustGet(t *testing.T, s store.Store, bucket, key string) string {
	t.Helper()
	v, err := get(t, s, bucket, key)
	if err != nil {
		t.Fatalf("get %s/%s: %v", bucket, key, err)
	}
	return string(v)
}

func list(t *testing.T, s store.Store, bucket, prefix string) []store.KV {
	t.Helper()
	var kvs []store.KV
	if err := s.View(func(r store.Reader) error {
		var err error
		kvs, err = r.List(bucket, prefix)
		return err
	}); err != nil {
		t.Fatalf("list %s/%s: %v", bucket, prefix, err)
	}
	return kvs
}

func keys(kvs []store.KV) []string {
	out := []string{}
	for _, kv := range kvs {
		out = append(out, kv.Key)
	}
	return out
}

func testPutGetOverwrite(t *testing.T, open Opener) {
	s := open(t)
	mustPut(t, s, "marketplaces", "corp", "v1")
	if got := mustGet(t, s, "marketplaces", "corp"); got != "v1" {
		t.Fatalf("get = %q, want v1", got)
	}
	mustPut(t, s, "marketplaces", "corp", "v2")
	if got := mustGet(t, s, "marketplaces", "corp"); got != "v2" {
		t.Fatalf("after overwrite get = %q, want v2", got)
	}
	if err := s.Update(func(tx store.Tx) error { return tx.Delete("marketplaces", "corp") }); err != nil {
		t.Fatal(err)
	}
	if _, err := get(t, s, "marketplaces", "corp"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after delete err = %v, want ErrNotFound", err)
	}
}

func testNotFound(t *testing.T, open Opener) {
	s := open(t)
	if _, err := get(t, s, "nobucket", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing bucket: err = %v, want ErrNotFound", err)
	}
	mustPut(t, s, "b", "k", "v")
	if _, err := get(t, s, "b", "other"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing key: err = %v, want ErrNotFound", err)
	}
	err := s.Update(func(tx store.Tx) error {
		_, err := tx.Get("b", "other")
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing key in Update: err = %v, want ErrNotFound", err)
	}
}

func testDeleteMissing(t *testing.T, open Opener) {
	s := open(t)
	err := s.Update(func(tx store.Tx) error {
		if err := tx.Delete("nobucket", "k"); err != nil {
			return err
		}
		if err := tx.Put("b", "k", []byte("v")); err != nil {
			return err
		}
		return tx.Delete("b", "missing")
	})
	if err != nil {
		t.Fatalf("deleting missing keys: %v", err)
	}
	if got := mustGet(t, s, "b", "k"); got != "v" {
		t.Fatalf("get = %q, want v", got)
	}
}

// listKeys are keys whose byte order differs from a naive order, put into
// bucket "keys" (each with the value "val-<key>") next to a bucket whose
// name extends it.
var listKeys = []string{"b", "abc", "a", "a/x", "ab", "\xff", "a\x00", "B", "ac"}

func putListKeys(t *testing.T, s store.Store) {
	t.Helper()
	if err := s.Update(func(tx store.Tx) error {
		for _, k := range listKeys {
			if err := tx.Put("keys", k, []byte("val-"+k)); err != nil {
				return err
			}
		}
		return tx.Put("keysx", "a-other-bucket", []byte("x"))
	}); err != nil {
		t.Fatal(err)
	}
}

func testListOrderAndPrefix(t *testing.T, open Opener) {
	s, in := open(t), listKeys
	putListKeys(t, s)
	all := list(t, s, "keys", "")
	want := slices.Clone(in)
	slices.Sort(want) // byte order
	if got := keys(all); !slices.Equal(got, want) {
		t.Fatalf("list all = %q, want %q", got, want)
	}
	for _, kv := range all {
		if string(kv.Value) != "val-"+kv.Key {
			t.Fatalf("value of %q = %q", kv.Key, kv.Value)
		}
	}
	cases := map[string][]string{
		"a":    {"a", "a\x00", "a/x", "ab", "abc", "ac"},
		"ab":   {"ab", "abc"},
		"a/":   {"a/x"},
		"abcd": {},
		"\xff": {"\xff"},
		"z":    {},
	}
	for prefix, want := range cases {
		if got := keys(list(t, s, "keys", prefix)); !slices.Equal(got, want) {
			t.Errorf("list prefix %q = %q, want %q", prefix, got, want)
		}
	}
	if got := list(t, s, "nobucket", ""); len(got) != 0 {
		t.Fatalf("list of a missing bucket = %v, want empty", got)
	}
}

func testListAfter(t *testing.T, open Opener) {
	s, in := open(t), listKeys
	putListKeys(t, s)
	after := func(r store.Reader, from string, limit int) []store.KV {
		t.Helper()
		kvs, err := r.ListAfter("keys", from, limit)
		if err != nil {
			t.Fatalf("list after %q: %v", from, err)
		}
		return kvs
	}
	want := slices.Clone(in)
	slices.Sort(want)
	if err := s.View(func(r store.Reader) error {
		if got := keys(after(r, "", 0)); !slices.Equal(got, want) {
			t.Errorf("list after \"\" = %q, want %q", got, want)
		}
		// Paging two at a time visits every key once, in order.
		var paged []string
		for from := ""; ; {
			page := after(r, from, 2)
			for _, kv := range page {
				if string(kv.Value) != "val-"+kv.Key {
					t.Errorf("value of %q = %q", kv.Key, kv.Value)
				}
				paged = append(paged, kv.Key)
			}
			if len(page) < 2 {
				break
			}
			from = page[len(page)-1].Key
		}
		if !slices.Equal(paged, want) {
			t.Errorf("paged = %q, want %q", paged, want)
		}
		cases := []struct {
			from  string
			limit int
			want  []string
		}{
			{"a", 3, []string{"a\x00", "a/x", "ab"}},
			{"aa", 0, []string{"ab", "abc", "ac", "b", "\xff"}},
			{"b", 1, []string{"\xff"}},
			{"\xff", 5, []string{}},
			{"A", 1, []string{"B"}},
		}
		for _, tc := range cases {
			if got := keys(after(r, tc.from, tc.limit)); !slices.Equal(got, tc.want) {
				t.Errorf("list after %q limit %d = %q, want %q", tc.from, tc.limit, got, tc.want)
			}
		}
		if kvs, err := r.ListAfter("nobucket", "", 3); err != nil || len(kvs) != 0 {
			t.Errorf("list after in a missing bucket = %v, %v", kvs, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Inside a transaction its own writes count.
	if err := s.Update(func(tx store.Tx) error {
		if err := tx.Put("keys", "aa", []byte("val-aa")); err != nil {
			return err
		}
		if err := tx.Delete("keys", "ab"); err != nil {
			return err
		}
		if got := keys(after(tx, "a/x", 3)); !slices.Equal(got, []string{"aa", "abc", "ac"}) {
			t.Errorf("list after within a transaction = %q", got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func testBucketsIsolated(t *testing.T, open Opener) {
	s := open(t)
	// Pairs that a naive "<bucket>/<key>" layout would merge.
	puts := []struct{ bucket, key string }{
		{"a", "b/c"},
		{"a/b", "c"},
		{"a%2Fb", "c"},
		{"ab", "c"},
		{".seq", "a"},
		{"a", ".seq"},
	}
	if err := s.Update(func(tx store.Tx) error {
		for _, p := range puts {
			if err := tx.Put(p.bucket, p.key, []byte(p.bucket+"|"+p.key)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, p := range puts {
		if got := mustGet(t, s, p.bucket, p.key); got != p.bucket+"|"+p.key {
			t.Errorf("get %q/%q = %q", p.bucket, p.key, got)
		}
	}
	if got := keys(list(t, s, "a", "")); !slices.Equal(got, []string{".seq", "b/c"}) {
		t.Errorf("list a = %q, want [.seq b/c]", got)
	}
	if got := keys(list(t, s, "a/b", "")); !slices.Equal(got, []string{"c"}) {
		t.Errorf("list a/b = %q, want [c]", got)
	}
	// A sequence is not a key of its bucket, and a bucket named like the
	// layout's own parts does not disturb it.
	var n uint64
	if err := s.Update(func(tx store.Tx) error {
		var err error
		n, err = tx.NextSequence("a")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("first NextSequence(a) = %d, want 1", n)
	}
	if got := keys(list(t, s, "a", "")); !slices.Equal(got, []string{".seq", "b/c"}) {
		t.Errorf("after NextSequence list a = %q, want [.seq b/c]", got)
	}
}

func testEmptyNames(t *testing.T, open Opener) {
	s := open(t)
	if err := s.Update(func(tx store.Tx) error { return tx.Put("b", "", []byte("v")) }); err == nil {
		t.Fatal("put with an empty key succeeded")
	}
	if err := s.Update(func(tx store.Tx) error { return tx.Put("", "k", []byte("v")) }); err == nil {
		t.Fatal("put into an empty bucket name succeeded")
	}
	// The failed put rolled back everything else in its transaction.
	err := s.Update(func(tx store.Tx) error {
		if err := tx.Put("b", "ok", []byte("v")); err != nil {
			return err
		}
		return tx.Put("b", "", []byte("v"))
	})
	if err == nil {
		t.Fatal("put with an empty key succeeded")
	}
	if _, err := get(t, s, "b", "ok"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("write before the failed put: err = %v, want ErrNotFound (rolled back)", err)
	}
}

func testValuesAreCopies(t *testing.T, open Opener) {
	s := open(t)
	val := []byte("original")
	if err := s.Update(func(tx store.Tx) error { return tx.Put("b", "k", val) }); err != nil {
		t.Fatal(err)
	}
	copy(val, "XXXXXXXX")
	got, err := get(t, s, "b", "k")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "original" {
		t.Fatalf("stored value changed with the caller's slice: %q", got)
	}
	copy(got, "YYYYYYYY")
	if again := mustGet(t, s, "b", "k"); again != "original" {
		t.Fatalf("stored value changed with the returned slice: %q", again)
	}
	kvs := list(t, s, "b", "")
	copy(kvs[0].Value, "ZZZZZZZZ")
	if again := mustGet(t, s, "b", "k"); again != "original" {
		t.Fatalf("stored value changed with a listed slice: %q", again)
	}
}

func testEmptyValue(t *testing.T, open Opener) {
	s := open(t)
	if err := s.Update(func(tx store.Tx) error { return tx.Put("b", "empty", []byte{}) }); err != nil {
		t.Fatal(err)
	}
	v, err := get(t, s, "b", "empty")
	if err != nil {
		t.Fatalf("get of a key with an empty value: %v, want found", err)
	}
	if len(v) != 0 {
		t.Fatalf("value = %q, want empty", v)
	}
	if got := keys(list(t, s, "b", "")); !slices.Equal(got, []string{"empty"}) {
		t.Fatalf("list = %q, want [empty]", got)
	}
}

func testReadYourWrites(t *testing.T, open Opener) {
	s := open(t)
	mustPut(t, s, "b", "old", "1")
	mustPut(t, s, "b", "gone", "1")
	err := s.Update(func(tx store.Tx) error {
		if err := tx.Put("b", "new", []byte("2")); err != nil {
			return err
		}
		if err := tx.Put("b", "old", []byte("changed")); err != nil {
			return err
		}
		if err := tx.Delete("b", "gone"); err != nil {
			return err
		}
		if v, err := tx.Get("b", "new"); err != nil || string(v) != "2" {
			return fmt.Errorf("get new = %q, %v", v, err)
		}
		if v, err := tx.Get("b", "old"); err != nil || string(v) != "changed" {
			return fmt.Errorf("get old = %q, %v", v, err)
		}
		if _, err := tx.Get("b", "gone"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("get gone: %v, want ErrNotFound", err)
		}
		kvs, err := tx.List("b", "")
		if err != nil {
			return err
		}
		if got := keys(kvs); !slices.Equal(got, []string{"new", "old"}) {
			return fmt.Errorf("list in tx = %q, want [new old]", got)
		}
		if string(kvs[1].Value) != "changed" {
			return fmt.Errorf("listed old = %q, want changed", kvs[1].Value)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(list(t, s, "b", "")); !slices.Equal(got, []string{"new", "old"}) {
		t.Fatalf("list after commit = %q, want [new old]", got)
	}
}

var errAbort = errors.New("abort")

// testGetMany: one multi-key read returns each key's value in order, nil
// for a missing key and a non-nil empty slice for an empty value, sees the
// transaction's own writes and deletes, and its values are the caller's.
func testGetMany(t *testing.T, open Opener) {
	s := open(t)
	mustPut(t, s, "b1", "a", "1")
	mustPut(t, s, "b1", "gone", "x")
	mustPut(t, s, "b1", "empty", "")
	mustPut(t, s, "b2", "a", "2")
	bk := func(b, k string) store.BucketKey { return store.BucketKey{Bucket: b, Key: k} }
	keys := []store.BucketKey{bk("b1", "a"), bk("b2", "a"), bk("b1", "missing"), bk("b1", "empty"), bk("b1", "a"), bk("b1", "gone"), bk("b1", "new")}
	check := func(vs [][]byte, want []any) {
		t.Helper()
		if len(vs) != len(want) {
			t.Fatalf("GetMany gave %d values for %d keys", len(vs), len(want))
		}
		for i, w := range want {
			switch w := w.(type) {
			case nil:
				if vs[i] != nil {
					t.Errorf("key %v = %q, want missing (nil)", keys[i], vs[i])
				}
			case string:
				if vs[i] == nil || string(vs[i]) != w {
					t.Errorf("key %v = %q (nil %v), want %q", keys[i], vs[i], vs[i] == nil, w)
				}
			}
		}
	}
	if err := s.View(func(r store.Reader) error {
		vs, err := store.GetMany(r, keys)
		if err != nil {
			return err
		}
		check(vs, []any{"1", "2", nil, "", "1", "x", nil})
		vs[0][0] = 'Z'
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, "b1", "a"); got != "1" {
		t.Fatalf("changing GetMany's value changed the store: %q", got)
	}
	if err := s.Update(func(tx store.Tx) error {
		if err := tx.Put("b1", "new", []byte("n")); err != nil {
			return err
		}
		if err := tx.Delete("b1", "gone"); err != nil {
			return err
		}
		vs, err := store.GetMany(tx, keys)
		if err != nil {
			return err
		}
		check(vs, []any{"1", "2", nil, "", "1", nil, "n"})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.View(func(r store.Reader) error {
		vs, err := store.GetMany(r, nil)
		if len(vs) != 0 {
			t.Errorf("GetMany of no keys = %q", vs)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func testRollback(t *testing.T, open Opener) {
	s := open(t)
	mustPut(t, s, "b", "keep", "1")
	err := s.Update(func(tx store.Tx) error {
		if err := tx.Put("b", "keep", []byte("2")); err != nil {
			return err
		}
		if err := tx.Put("b", "new", []byte("x")); err != nil {
			return err
		}
		if err := tx.Put("other", "new", []byte("x")); err != nil {
			return err
		}
		if err := tx.Delete("b", "keep"); err != nil {
			return err
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatalf("Update returned %v, want the error of fn", err)
	}
	if got := mustGet(t, s, "b", "keep"); got != "1" {
		t.Fatalf("after rollback keep = %q, want 1", got)
	}
	for _, b := range []string{"b", "other"} {
		if _, err := get(t, s, b, "new"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("after rollback %s/new: err = %v, want ErrNotFound", b, err)
		}
	}
}

func testLargeTransaction(t *testing.T, open Opener) {
	s := open(t)
	const n = 100
	err := s.Update(func(tx store.Tx) error {
		for i := range n {
			if err := tx.Put("registry", fmt.Sprintf("p%03d", i), []byte(strconv.Itoa(i))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(list(t, s, "registry", "p")); got != n {
		t.Fatalf("listed %d entries, want %d", got, n)
	}
	// Rewrite all of them in one transaction that read all of them.
	err = s.Update(func(tx store.Tx) error {
		kvs, err := tx.List("registry", "")
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			v, err := tx.Get("registry", kv.Key)
			if err != nil {
				return err
			}
			if err := tx.Put("registry", kv.Key, append(v, '!')); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, "registry", "p042"); got != "42!" {
		t.Fatalf("p042 = %q, want 42!", got)
	}
}

func nextSeq(t *testing.T, s store.Store, bucket string) uint64 {
	t.Helper()
	var n uint64
	if err := s.Update(func(tx store.Tx) error {
		var err error
		n, err = tx.NextSequence(bucket)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func testSequencePerBucket(t *testing.T, open Opener) {
	s := open(t)
	for want := uint64(1); want <= 3; want++ {
		if got := nextSeq(t, s, "audit"); got != want {
			t.Fatalf("NextSequence(audit) = %d, want %d", got, want)
		}
	}
	if got := nextSeq(t, s, "other"); got != 1 {
		t.Fatalf("NextSequence(other) = %d, want 1 (per-bucket counter)", got)
	}
	// Several in one transaction.
	var got []uint64
	if err := s.Update(func(tx store.Tx) error {
		for range 3 {
			n, err := tx.NextSequence("audit")
			if err != nil {
				return err
			}
			got = append(got, n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []uint64{4, 5, 6}) {
		t.Fatalf("three in one tx = %v, want [4 5 6]", got)
	}
}

func testSequenceRollback(t *testing.T, open Opener) {
	s := open(t)
	if got := nextSeq(t, s, "audit"); got != 1 {
		t.Fatalf("first = %d, want 1", got)
	}
	err := s.Update(func(tx store.Tx) error {
		if _, err := tx.NextSequence("audit"); err != nil {
			return err
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatalf("Update = %v, want errAbort", err)
	}
	if got := nextSeq(t, s, "audit"); got != 2 {
		t.Fatalf("after a rolled-back tx = %d, want 2 (no gap)", got)
	}
}

// testSequenceConcurrent: goroutines append to a log keyed by NextSequence.
// The numbers handed out are exactly 1..N, each once, each goroutine's own
// numbers strictly increase, and every entry is stored under its number.
func testSequenceConcurrent(t *testing.T, client func(int) store.Store) {
	const workers, each = 6, 15
	var (
		mu  sync.Mutex
		all []uint64
		wg  sync.WaitGroup
	)
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := client(w)
			var last uint64
			for i := range each {
				var n uint64
				err := s.Update(func(tx store.Tx) error {
					var err error
					n, err = tx.NextSequence("audit")
					if err != nil {
						return err
					}
					return tx.Put("audit", fmt.Sprintf("%020d", n), []byte(fmt.Sprintf("w%d-%d", w, i)))
				})
				if err != nil {
					errs <- err
					return
				}
				if n <= last {
					errs <- fmt.Errorf("worker %d got %d after %d", w, n, last)
					return
				}
				last = n
				mu.Lock()
				all = append(all, n)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	slices.Sort(all)
	for i, n := range all {
		if n != uint64(i+1) {
			t.Fatalf("sequence numbers are not 1..%d without gaps or repeats: position %d holds %d", workers*each, i, n)
		}
	}
	kvs := list(t, client(0), "audit", "")
	if len(kvs) != workers*each {
		t.Fatalf("log has %d entries, want %d", len(kvs), workers*each)
	}
	for i, kv := range kvs {
		if kv.Key != fmt.Sprintf("%020d", i+1) {
			t.Fatalf("log entry %d has key %q", i, kv.Key)
		}
	}
}

func addToCounter(s store.Store, key string, delta int) error {
	return s.Update(func(tx store.Tx) error {
		n := 0
		v, err := tx.Get("counters", key)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err
		default:
			if n, err = strconv.Atoi(string(v)); err != nil {
				return err
			}
		}
		return tx.Put("counters", key, []byte(strconv.Itoa(n+delta)))
	})
}

// testCounter: read-modify-write from many goroutines loses no increment.
func testCounter(t *testing.T, client func(int) store.Store) {
	const workers, each = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if err := addToCounter(client(w), "hits", 1); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := mustGet(t, client(0), "counters", "hits"); got != strconv.Itoa(workers*each) {
		t.Fatalf("counter = %s, want %d", got, workers*each)
	}
}

// testCASRace: for each version, racers try to move a document from that
// version to the next, as a policy push with an expected version does.
// Exactly one wins each round; the others see ErrConflict.
func testCASRace(t *testing.T, client func(int) store.Store) {
	const racers, rounds = 5, 8
	mustPut(t, client(0), "policy", "org", "0")
	for round := range rounds {
		expected := strconv.Itoa(round)
		var (
			wg      sync.WaitGroup
			start   = make(chan struct{})
			results = make([]error, racers)
		)
		for r := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				results[r] = client(r).Update(func(tx store.Tx) error {
					cur, err := tx.Get("policy", "org")
					if err != nil {
						return err
					}
					if string(cur) != expected {
						return fmt.Errorf("policy org is at version %s, not %s: %w", cur, expected, store.ErrConflict)
					}
					if err := tx.Put("policy", "org", []byte(strconv.Itoa(round+1))); err != nil {
						return err
					}
					return tx.Put("policy", "org-author", []byte(strconv.Itoa(r)))
				})
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for r, err := range results {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("round %d: racers %d and %d both won", round, winner, r)
				}
				winner = r
			case errors.Is(err, store.ErrConflict):
			default:
				t.Fatalf("round %d: racer %d: %v", round, r, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody won", round)
		}
		if got := mustGet(t, client(0), "policy", "org-author"); got != strconv.Itoa(winner) {
			t.Fatalf("round %d: author = %s, want the winner %d", round, got, winner)
		}
	}
	if got := mustGet(t, client(0), "policy", "org"); got != strconv.Itoa(rounds) {
		t.Fatalf("final version = %s, want %d", got, rounds)
	}
}

func testCASHelper(t *testing.T, open Opener) {
	s := open(t)
	if err := store.CompareAndSwap(s, "policy", "org", nil, []byte("v1")); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := store.CompareAndSwap(s, "policy", "org", nil, []byte("v1")); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("create again: %v, want ErrConflict", err)
	}
	if err := store.CompareAndSwap(s, "policy", "org", []byte("v0"), []byte("v2")); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("swap from a stale value: %v, want ErrConflict", err)
	}
	if got := mustGet(t, s, "policy", "org"); got != "v1" {
		t.Fatalf("after failed swaps = %q, want v1", got)
	}
	if err := store.CompareAndSwap(s, "policy", "org", []byte("v1"), []byte("v2")); err != nil {
		t.Fatalf("swap: %v", err)
	}
	if err := store.CompareAndSwap(s, "policy", "org", []byte("v2"), nil); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := store.CompareAndSwap(s, "policy", "org", []byte("v2"), []byte("v3")); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("swap of a deleted key: %v, want ErrConflict", err)
	}
}

// testTransfers moves amounts between accounts while readers check, in
// View and in Update, that the total never changes: every snapshot is
// consistent and no transfer is lost or half-applied.
func testTransfers(t *testing.T, client func(int) store.Store) {
	const accounts, start, workers, each = 4, 100, 4, 12
	if err := client(0).Update(func(tx store.Tx) error {
		for a := range accounts {
			if err := tx.Put("accounts", strconv.Itoa(a), []byte(strconv.Itoa(start))); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	total := func(kvs []store.KV) (int, error) {
		sum := 0
		for _, kv := range kvs {
			n, err := strconv.Atoi(string(kv.Value))
			if err != nil {
				return 0, err
			}
			sum += n
		}
		return sum, nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers)
	for w := range workers {
		wg.Add(2)
		go func() { // writer
			defer wg.Done()
			s := client(w)
			for i := range each {
				from, to := strconv.Itoa((w+i)%accounts), strconv.Itoa((w+i+1)%accounts)
				err := s.Update(func(tx store.Tx) error {
					var fv, tv []byte
					if i%2 == 0 {
						var err error
						if fv, err = tx.Get("accounts", from); err != nil {
							return err
						}
						if tv, err = tx.Get("accounts", to); err != nil {
							return err
						}
					} else {
						// Both read in one request; the commit check
						// covers them as it covers Get's.
						vs, err := store.GetMany(tx, []store.BucketKey{{Bucket: "accounts", Key: from}, {Bucket: "accounts", Key: to}})
						if err != nil {
							return err
						}
						fv, tv = vs[0], vs[1]
					}
					f, _ := strconv.Atoi(string(fv))
					g, _ := strconv.Atoi(string(tv))
					amount := 1 + (w+i)%7
					if err := tx.Put("accounts", from, []byte(strconv.Itoa(f-amount))); err != nil {
						return err
					}
					return tx.Put("accounts", to, []byte(strconv.Itoa(g+amount)))
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() { // reader
			defer wg.Done()
			s := client(w + 1)
			for i := range each {
				check := func(r store.Reader) error {
					sum := 0
					switch i % 4 {
					case 0, 2:
						kvs, err := r.List("accounts", "")
						if err != nil {
							return err
						}
						if sum, err = total(kvs); err != nil {
							return err
						}
					case 3:
						var ks []store.BucketKey
						for a := range accounts {
							ks = append(ks, store.BucketKey{Bucket: "accounts", Key: strconv.Itoa(a)})
						}
						vs, err := store.GetMany(r, ks)
						if err != nil {
							return err
						}
						for _, v := range vs {
							n, _ := strconv.Atoi(string(v))
							sum += n
						}
					default:
						for a := range accounts {
							v, err := r.Get("accounts", strconv.Itoa(a))
							if err != nil {
								return err
							}
							n, _ := strconv.Atoi(string(v))
							sum += n
						}
					}
					if sum != accounts*start {
						return fmt.Errorf("a snapshot shows a total of %d, want %d", sum, accounts*start)
					}
					return nil
				}
				var err error
				if i%3 == 0 {
					err = s.Update(func(tx store.Tx) error { return check(tx) })
				} else {
					err = s.View(check)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sum, err := total(list(t, client(0), "accounts", ""))
	if err != nil {
		t.Fatal(err)
	}
	if sum != accounts*start {
		t.Fatalf("final total = %d, want %d", sum, accounts*start)
	}
}

// nextEvent returns the next change on ch, skipping progress marks.
func nextEvent(t *testing.T, ch <-chan store.Event) store.Event {
	t.Helper()
	deadline := time.After(watchWait)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("watch channel closed before the event arrived")
			}
			if ev.Progress {
				continue
			}
			return ev
		case <-deadline:
			t.Fatalf("no watch event within %s", watchWait)
		}
	}
}

func testWatch(t *testing.T, open Opener) {
	s := open(t)
	w, ok := s.(store.Watcher)
	if !ok {
		t.Skip("backend does not implement store.Watcher")
	}
	mustPut(t, s, "tokens", "before", "x") // committed before Watch: not delivered
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := w.Watch(ctx, "tokens")
	if err != nil {
		t.Fatal(err)
	}
	// Not delivered: another bucket, a bucket whose name extends this one,
	// and a rolled-back update.
	mustPut(t, s, "policy", "org", "x")
	mustPut(t, s, "tokensx", "t", "x")
	if err := s.Update(func(tx store.Tx) error {
		if err := tx.Put("tokens", "rolledback", []byte("x")); err != nil {
			return err
		}
		return errAbort
	}); !errors.Is(err, errAbort) {
		t.Fatal(err)
	}
	mustPut(t, s, "tokens", "tok1", "revoked")
	if ev := nextEvent(t, ch); ev.Bucket != "tokens" || ev.Key != "tok1" || string(ev.Value) != "revoked" || ev.Deleted {
		t.Fatalf("first event = %+v, want put tokens/tok1=revoked", ev)
	}
	// One commit with several keys: key order, final state per key.
	if err := s.Update(func(tx store.Tx) error {
		if err := tx.Put("tokens", "tok3", []byte("a")); err != nil {
			return err
		}
		if err := tx.Put("tokens", "tok3", []byte("b")); err != nil {
			return err
		}
		return tx.Put("tokens", "tok2", []byte("c"))
	}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []store.Event{{Bucket: "tokens", Key: "tok2", Value: []byte("c")}, {Bucket: "tokens", Key: "tok3", Value: []byte("b")}} {
		if ev := nextEvent(t, ch); ev.Key != want.Key || !bytes.Equal(ev.Value, want.Value) || ev.Deleted {
			t.Fatalf("event = %+v, want %+v", ev, want)
		}
	}
	if err := s.Update(func(tx store.Tx) error { return tx.Delete("tokens", "tok1") }); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, ch); ev.Key != "tok1" || !ev.Deleted || ev.Value != nil {
		t.Fatalf("event = %+v, want delete of tok1", ev)
	}
}

func testWatchCancel(t *testing.T, open Opener) {
	s := open(t)
	w, ok := s.(store.Watcher)
	if !ok {
		t.Skip("backend does not implement store.Watcher")
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := w.Watch(ctx, "tokens")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	// A consumer that stops reading must not block writers.
	for i := range 50 {
		mustPut(t, s, "tokens", strconv.Itoa(i), "x")
	}
	cancel()
	deadline := time.After(watchWait)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("watch channel still open %s after its context ended", watchWait)
		}
	}
}

// testWatchOrder: concurrent read-modify-write increments commit the values
// 1..N in that order, so the watch must deliver exactly 1..N in order.
func testWatchOrder(t *testing.T, open Opener) {
	s := open(t)
	w, ok := s.(store.Watcher)
	if !ok {
		t.Skip("backend does not implement store.Watcher")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := w.Watch(ctx, "counters")
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 6, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if err := addToCounter(s, "hits", 1); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for want := 1; want <= workers*each; want++ {
		ev := nextEvent(t, ch)
		if ev.Key != "hits" || string(ev.Value) != strconv.Itoa(want) {
			t.Fatalf("event %d: %s=%s, want hits=%d (commit order)", want, ev.Key, ev.Value, want)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// testWatchProgress: a healthy watch sends progress marks, and a mark whose
// AsOf is after a commit returned comes after that commit's event.
func testWatchProgress(t *testing.T, open Opener) {
	s := open(t)
	w, ok := s.(store.Watcher)
	if !ok {
		t.Skip("backend does not implement store.Watcher")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := w.Watch(ctx, "tokens")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		key := "k" + strconv.Itoa(i)
		mustPut(t, s, "tokens", key, "x")
		committed := time.Now()
		seen := false
		deadline := time.After(watchWait)
		for done := false; !done; {
			select {
			case ev, ok := <-ch:
				if !ok {
					t.Fatal("watch closed")
				}
				switch {
				case !ev.Progress && ev.Key == key:
					seen = true
				case ev.Progress && ev.AsOf.After(committed):
					if !seen {
						t.Fatalf("progress mark as of %s came before the event of %s, committed at %s", ev.AsOf, key, committed)
					}
					done = true
				}
			case <-deadline:
				t.Fatalf("no progress mark after the commit of %s within %s (seen its event: %v)", key, watchWait, seen)
			}
		}
	}
}
