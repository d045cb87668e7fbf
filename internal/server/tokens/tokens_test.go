package tokens_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/tokens"
	"github.com/wharfhq/wharf/internal/testutil/storeharness"
)

// The tokens' contract, on every backend: Open returns a fresh, empty
// store; Again returns another client of the same store (a replica).
func TestTokens(t *testing.T) {
	storeharness.Run(t, "tokens", runContract)
}

func runContract(t *testing.T, b *storeharness.Backend) {
	t.Run("PutFindList", func(t *testing.T) { testPutFindList(t, b) })
	t.Run("DeleteRules", func(t *testing.T) { testDeleteRules(t, b) })
	t.Run("CacheFollowsWatch", func(t *testing.T) { testCacheFollowsWatch(t, b) })
	t.Run("CacheExpires", func(t *testing.T) { testCacheExpires(t, b) })
	t.Run("IdentityKept", func(t *testing.T) { testIdentityKept(t, b) })
}

// newRecord is a token of role with a new secret.
func newRecord(t *testing.T, role tokens.Role) (tokens.Record, string) {
	t.Helper()
	secret, err := tokens.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	id, err := tokens.NewID()
	if err != nil {
		t.Fatal(err)
	}
	return tokens.Record{ID: id, Role: role, Hash: tokens.HashSecret(secret), CreatedAt: time.Now().UTC(), CreatedBy: "test"}, secret
}

func put(t *testing.T, st store.Store, recs ...tokens.Record) {
	t.Helper()
	err := st.Update(func(tx store.Tx) error {
		for _, r := range recs {
			if err := tokens.Put(tx, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func byHash(t *testing.T, st store.Store, secret string) *tokens.Record {
	t.Helper()
	var rec *tokens.Record
	err := st.View(func(r store.Reader) (err error) {
		rec, err = tokens.ByHash(r, tokens.HashSecret(secret))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// A stored token is found by its secret and listed; the store keeps only
// the secret's hash, and the API's view of it shows neither.
func testPutFindList(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	admin, adminSecret := newRecord(t, tokens.RoleAdmin)
	agent, agentSecret := newRecord(t, tokens.RoleAgent)
	agent.MaxPlugins = 7
	put(t, st, admin, agent)

	if got := byHash(t, st, agentSecret); got == nil || got.ID != agent.ID || got.Role != tokens.RoleAgent {
		t.Fatalf("agent's secret finds %+v", got)
	}
	if got := byHash(t, st, "wharf_not-a-token"); got != nil {
		t.Fatalf("an unknown secret finds %+v", got)
	}
	var all []tokens.Record
	err := st.View(func(r store.Reader) (err error) { all, err = tokens.List(r); return err })
	if err != nil || len(all) != 2 {
		t.Fatalf("List = %+v, %v", all, err)
	}
	err = st.View(func(r store.Reader) error {
		kvs, err := r.List(tokens.Bucket, "")
		for _, kv := range kvs {
			if strings.Contains(string(kv.Value), adminSecret) || strings.Contains(string(kv.Value), agentSecret) {
				t.Errorf("the store keeps a secret: %s", kv.Value)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(agent.Public())
	if strings.Contains(string(raw), agent.Hash) || strings.Contains(string(raw), `"hash"`) {
		t.Fatalf("the API's view shows the hash: %s", raw)
	}
	// The quota in force: an agent token is one machine, with what the
	// admin set of the plugins.
	if q := agent.Public(); q.MaxMachines != tokens.DefaultAgentMachines || q.MaxPlugins != 7 {
		t.Fatalf("agent quota = %d machines, %d plugins", q.MaxMachines, q.MaxPlugins)
	}
	if q := admin.Quota(); q.Machines != tokens.DefaultMachines || q.Plugins != max(inventory.MaxPlugins, tokens.DefaultMachines*tokens.DefaultPluginsPerMachine) {
		t.Fatalf("admin quota = %+v", q)
	}
}

// Deleting: an unknown id is *NotFoundError; the last admin token stays
// (*LastAdminError, nothing deleted); a deleted token's secret finds
// nothing.
func testDeleteRules(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	admin, adminSecret := newRecord(t, tokens.RoleAdmin)
	dev, devSecret := newRecord(t, tokens.RoleDeveloper)
	put(t, st, admin, dev)

	del := func(id string) (tokens.Record, error) {
		var rec tokens.Record
		err := st.Update(func(tx store.Tx) (err error) { rec, err = tokens.Delete(tx, id); return err })
		return rec, err
	}
	var nf *tokens.NotFoundError
	if _, err := del("tok_0000000000000000"); !errors.As(err, &nf) || !strings.Contains(err.Error(), "GET /v1/tokens") {
		t.Fatalf("deleting an unknown id: %v", err)
	}
	var last *tokens.LastAdminError
	if _, err := del(admin.ID); !errors.As(err, &last) || last.ID != admin.ID {
		t.Fatalf("deleting the last admin: %v", err)
	}
	if byHash(t, st, adminSecret) == nil {
		t.Fatal("the last admin token was deleted")
	}
	if rec, err := del(dev.ID); err != nil || rec.ID != dev.ID {
		t.Fatalf("deleting the developer's token: %+v %v", rec, err)
	}
	if got := byHash(t, st, devSecret); got != nil {
		t.Fatalf("a deleted token's secret finds %+v", got)
	}
	admin2, _ := newRecord(t, tokens.RoleAdmin)
	put(t, st, admin2)
	if _, err := del(admin.ID); err != nil {
		t.Fatalf("deleting an admin token when another exists: %v", err)
	}
}

// The cache, kept fresh only by the store's watch (as while every watch
// proves itself: entries never expire), answers every lookup as the store
// does, while another replica creates, rewrites and deletes tokens.
func testCacheFollowsWatch(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	w, ok := st.(store.Watcher)
	if !ok {
		t.Fatalf("%T has no watch", st)
	}
	other := b.Again(t, st)
	reads := 0
	cache := tokens.NewCache(st, time.Hour, func(exp, now time.Time) bool { return true },
		func(*tokens.Record) int { reads++; return reads })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var applied atomic.Int64
	for _, bucket := range []string{tokens.IndexBucket, tokens.Bucket} {
		ch, err := w.Watch(ctx, bucket)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for ev := range ch {
				if !ev.Progress {
					cache.Apply(ev)
					applied.Add(1)
				}
			}
		}()
	}
	// wait until the watch applied n changes in all.
	wait := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for applied.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("the watch applied %d changes of %d", applied.Load(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}

	rng := rand.New(rand.NewPCG(33, 1))
	admin, _ := newRecord(t, tokens.RoleAdmin)
	put(t, other, admin)
	var want int64 = 2 // a token is two keys
	wait(want)
	var secrets []string
	live := map[string]tokens.Record{} // secret → record
	for step := range 120 {
		switch op := rng.IntN(4); {
		case op == 0 || len(live) == 0: // create
			rec, secret := newRecord(t, tokens.Roles[1+rng.IntN(3)])
			put(t, other, rec)
			secrets, live[secret] = append(secrets, secret), rec
			want += 2
		case op == 1: // rewrite: another role, another note
			secret := secrets[rng.IntN(len(secrets))]
			rec, ok := live[secret]
			if !ok {
				continue
			}
			rec.Role, rec.Note = tokens.Roles[1+rng.IntN(3)], fmt.Sprintf("step %d", step)
			put(t, other, rec)
			live[secret] = rec
			want += 2
		case op == 2: // delete
			secret := secrets[rng.IntN(len(secrets))]
			rec, ok := live[secret]
			if !ok {
				continue
			}
			if err := other.Update(func(tx store.Tx) error { _, err := tokens.Delete(tx, rec.ID); return err }); err != nil {
				t.Fatal(err)
			}
			delete(live, secret)
			want += 2
		}
		wait(want)
		now := time.Now()
		for _, secret := range append(secrets, "wharf_never-issued") {
			e, err := cache.Lookup(secret, now)
			if err != nil {
				t.Fatal(err)
			}
			if got, stored := e.Rec, byHash(t, st, secret); !sameRecord(got, stored) {
				t.Fatalf("step %d: cached %+v, stored %+v", step, got, stored)
			}
		}
	}
	if cache.Len() == 0 {
		t.Fatal("nothing was ever cached: the test compared the store with itself")
	}
}

// Without a watch's proof, an entry is used until its TTL, then read again.
func testCacheExpires(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	const ttl = time.Minute
	cache := tokens.NewCache(st, ttl, func(exp, now time.Time) bool { return now.Before(exp) },
		func(*tokens.Record) struct{} { return struct{}{} })
	rec, secret := newRecord(t, tokens.RoleDeveloper)
	put(t, st, rec)
	t0 := time.Now()
	if e, err := cache.Lookup(secret, t0); err != nil || e.Rec == nil || e.Rec.Role != tokens.RoleDeveloper {
		t.Fatalf("first lookup: %+v %v", e.Rec, err)
	}
	rec.Role = tokens.RoleCI
	put(t, b.Again(t, st), rec) // a change this cache hears nothing of
	if e, _ := cache.Lookup(secret, t0.Add(ttl/2)); e.Rec == nil || e.Rec.Role != tokens.RoleDeveloper {
		t.Fatalf("within the TTL the cached entry serves: %+v", e.Rec)
	}
	if e, _ := cache.Lookup(secret, t0.Add(ttl)); e.Rec == nil || e.Rec.Role != tokens.RoleCI {
		t.Fatalf("after the TTL the store's record serves: %+v", e.Rec)
	}
	// A drop (this server's own revocation) takes effect at once.
	if err := st.Update(func(tx store.Tx) error { _, err := tokens.Delete(tx, rec.ID); return err }); err != nil {
		t.Fatal(err)
	}
	cache.Drop(rec.Hash)
	if e, _ := cache.Lookup(secret, t0.Add(ttl)); e.Rec != nil {
		t.Fatalf("a dropped, deleted token still serves: %+v", e.Rec)
	}
}

func sameRecord(a, b *tokens.Record) bool {
	if a == nil || b == nil {
		return a == b
	}
	ra, _ := json.Marshal(a)
	rb, _ := json.Marshal(b)
	return string(ra) == string(rb)
}
