package mcpregistry_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/capability"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/mcpregistry"
	"github.com/wharfhq/wharf/internal/testutil/storeharness"
)

func srv(name, version string) mcpregistry.Server {
	return mcpregistry.Server{Name: name, Description: "d", Version: version}
}

// The added servers' contract, on every backend.
func TestStore(t *testing.T) {
	storeharness.Run(t, "mcpregistry", func(t *testing.T, b *storeharness.Backend) {
		st := b.Open(t)
		add := func(rec mcpregistry.Record) error {
			return st.Update(func(tx store.Tx) error { return mcpregistry.Add(tx, rec) })
		}
		t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		if err := add(mcpregistry.Record{Server: srv("com.example/b", "1.0.0"), By: "tok_a", Added: t0}); err != nil {
			t.Fatal(err)
		}
		if err := add(mcpregistry.Record{Server: srv("com.example/a", "2.0.0"), By: "tok_a", Added: t0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		var ex *mcpregistry.ExistsError
		if err := add(mcpregistry.Record{Server: srv("com.example/b", "1.0.0")}); !errors.As(err, &ex) || ex.Version != "1.0.0" {
			t.Fatalf("the same version again: %v", err)
		}
		var rs *mcpregistry.ReservedError
		if err := add(mcpregistry.Record{Server: srv("io.wharf.corp/x", "1.0.0")}); !errors.As(err, &rs) {
			t.Fatalf("a name in the plugins' namespace: %v", err)
		}
		var fe *mcpregistry.FieldError
		if err := add(mcpregistry.Record{Server: srv("com.example/c", "1.x")}); !errors.As(err, &fe) || fe.Field != "version" {
			t.Fatalf("a range: %v", err)
		}
		var got []mcpregistry.Record
		if err := b.Again(t, st).View(func(r store.Reader) (err error) { got, err = mcpregistry.All(r); return err }); err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Server.Name != "com.example/a" || got[1].By != "tok_a" || !got[1].Added.Equal(t0) {
			t.Fatalf("another replica reads %+v", got)
		}
		if err := st.Update(func(tx store.Tx) error { _, err := mcpregistry.Delete(tx, "com.example/b", "1.0.0"); return err }); err != nil {
			t.Fatal(err)
		}
		if err := st.Update(func(tx store.Tx) error { _, err := mcpregistry.Delete(tx, "com.example/b", "1.0.0"); return err }); !errors.Is(err, mcpregistry.ErrNotFound) {
			t.Fatalf("delete again: %v", err)
		}
		if err := st.Update(func(tx store.Tx) error { return tx.Put(mcpregistry.Bucket, "com.example/z 1", []byte("{")) }); err != nil {
			t.Fatal(err)
		}
		var ce *mcpregistry.CorruptError
		if err := st.View(func(r store.Reader) error { _, err := mcpregistry.All(r); return err }); !errors.As(err, &ce) || ce.Key != "com.example/z 1" {
			t.Fatalf("corrupt record: %v", err)
		}
	})
}

func TestFullRegistryIsRefused(t *testing.T) {
	storeharness.Run(t, "mcpregistry-full", func(t *testing.T, b *storeharness.Backend) {
		if b.Name != "bolt" {
			t.Skip("one backend is enough for the bound")
		}
		st := b.Open(t)
		if err := st.Update(func(tx store.Tx) error {
			for i := 0; i < mcpregistry.Max; i++ {
				if err := tx.Put(mcpregistry.Bucket, strings.Repeat("k", 1)+string(rune('a'+i%26))+strings.Repeat("x", i/26%50)+" "+time.Duration(i).String(), []byte(`{}`)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		err := st.Update(func(tx store.Tx) error {
			return mcpregistry.Add(tx, mcpregistry.Record{Server: srv("com.example/x", "1.0.0")})
		})
		var full mcpregistry.FullError
		if !errors.As(err, &full) || !strings.Contains(err.Error(), "delete some") {
			t.Fatalf("a full registry: %v", err)
		}
	})
}

func TestListsPermits(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	id := mcpregistry.Identity{Names: []string{"pg", "io.wharf.corp/db-pg"}, Command: []string{"npx", "-y", "pg"}, URLs: []string{"https://mcp.corp.example/a/mcp"}}
	for name, c := range map[string]struct {
		l    mcpregistry.Lists
		want bool
	}{
		"no lists":             {mcpregistry.Lists{}, true},
		"denied by name":       {mcpregistry.Lists{Denied: []json.RawMessage{raw(`{"serverName": "pg"}`)}}, false},
		"denied by reg name":   {mcpregistry.Lists{Denied: []json.RawMessage{raw(`{"serverName": "io.wharf.corp/db-pg"}`)}}, false},
		"denied by command":    {mcpregistry.Lists{Denied: []json.RawMessage{raw(`{"serverCommand": ["npx", "-y", "pg"]}`)}}, false},
		"other command":        {mcpregistry.Lists{Denied: []json.RawMessage{raw(`{"serverCommand": ["npx", "pg"]}`)}}, true},
		"denied by url":        {mcpregistry.Lists{Denied: []json.RawMessage{raw(`{"serverUrl": "https://*.corp.example/*"}`)}}, false},
		"unreadable denial":    {mcpregistry.Lists{Denied: []json.RawMessage{raw(`[1]`)}}, false},
		"empty allowlist":      {mcpregistry.Lists{Allowed: []json.RawMessage{}}, false},
		"allowed by url":       {mcpregistry.Lists{Allowed: []json.RawMessage{raw(`{"serverUrl": "https://mcp.corp.example/*"}`)}}, true},
		"allowed, then denied": {mcpregistry.Lists{Allowed: []json.RawMessage{raw(`{"serverName": "pg"}`)}, Denied: []json.RawMessage{raw(`{"serverName": "pg"}`)}}, false},
		"allowlist of another": {mcpregistry.Lists{Allowed: []json.RawMessage{raw(`{"serverName": "web"}`)}}, false},
	} {
		if got := c.l.Permits(id); got != c.want {
			t.Errorf("%s: Permits = %v", name, got)
		}
	}
}

func TestFromPlugin(t *testing.T) {
	info := mcpregistry.PluginInfo{Channel: "approved", Name: "db", Origin: "db@corp", Version: "unknown", Digest: "w1:abc", CloneURL: "https://wharf.example/git/approved.git"}
	e, err := mcpregistry.FromPlugin(info, capability.Server{Name: "pg", Transport: "", Command: "uvx", Fetches: []capability.Fetch{{Tool: "uvx", Package: "pg-mcp==1.2.3", Pinned: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Server.Name != "io.wharf.corp/db-pg" || !strings.HasPrefix(e.Server.Version, "0.0.0-w1.") || len(e.Server.Packages) != 1 ||
		e.Server.Packages[0].RegistryType != "pypi" || e.Server.Packages[0].Identifier != "pg-mcp" || e.Server.Packages[0].Version != "1.2.3" {
		t.Fatalf("uvx server: %+v", e.Server)
	}
	if _, err := mcpregistry.FromPlugin(info, capability.Server{Name: "bad name/x"}); err == nil {
		t.Fatal("a server name a registry name cannot hold was mapped")
	}
	// A remote whose URL is no URL template is served without the remote.
	e, err = mcpregistry.FromPlugin(info, capability.Server{Name: "w", Transport: "http", URL: "ftp://x"})
	if err != nil || len(e.Server.Remotes) != 0 {
		t.Fatalf("bad remote: %+v %v", e.Server, err)
	}
}

func TestCursorAndList(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	es := []mcpregistry.Entry{
		{Server: srv("com.example/b", "1.0.0"), Published: t0},
		{Server: srv("com.example/a", "1.0.0"), Published: t0},
		{Server: srv("com.example/a", "0.9.0"), Published: t0.Add(time.Hour)},
	}
	mcpregistry.Finish(es)
	if l, ok := mcpregistry.Get(es, "com.example/a", "latest"); !ok || l.Server.Version != "0.9.0" {
		t.Fatalf("latest is the one published last: %+v", l)
	}
	page, next, err := mcpregistry.List(es, mcpregistry.Query{Limit: 2})
	if err != nil || len(page) != 2 || next == "" {
		t.Fatalf("page 1: %v %q %v", page, next, err)
	}
	page, next, err = mcpregistry.List(es, mcpregistry.Query{Limit: 2, Cursor: next})
	if err != nil || len(page) != 1 || page[0].Server.Name != "com.example/b" || next != "" {
		t.Fatalf("page 2: %v %q %v", page, next, err)
	}
	if vs := mcpregistry.Versions(es, "com.example/a"); len(vs) != 2 || vs[0].Server.Version != "0.9.0" {
		t.Fatalf("versions, newest first: %+v", vs)
	}
	for _, c := range []string{"%%%", "Zm9v", strings.Repeat("A", 2000)} {
		var fe *mcpregistry.FieldError
		if _, _, err := mcpregistry.List(es, mcpregistry.Query{Cursor: c}); !errors.As(err, &fe) || fe.Field != "cursor" {
			t.Errorf("cursor %.20q: %v", c, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"name": "com.example/x", "description": "d", "version": "1.0.0", "remotes": [{"type": "sse", "url": "{base}/sse", "variables": {"base": {}}}]}`))
	f.Add([]byte(`{"name": "com.example/x", "description": "d", "version": "1.0.0", "packages": [{"registryType": "npm", "identifier": "x", "transport": {"type": "stdio"}, "packageArguments": [{"type": "named", "name": "--p"}]}]}`))
	f.Add([]byte(`{"name": "a/b"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := mcpregistry.Parse(data)
		if err != nil {
			var fe *mcpregistry.FieldError
			if !errors.As(err, &fe) || fe.Field == "" {
				t.Fatalf("error without a field: %v", err)
			}
			return
		}
		// What is accepted is accepted again after a round trip.
		raw, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mcpregistry.Parse(raw); err != nil {
			t.Fatalf("accepted %s, refused its round trip: %v", data, err)
		}
	})
}

func FuzzCursor(f *testing.F) {
	f.Add("Y29tLmV4YW1wbGUvYQoxLjAuMA")
	f.Add("")
	f.Add("////")
	f.Fuzz(func(t *testing.T, c string) {
		name, version, err := mcpregistry.DecodeCursor(c)
		if err != nil {
			return
		}
		if mcpregistry.ValidName(name) != nil || mcpregistry.ValidVersion(version) != nil {
			t.Fatalf("cursor %q decoded to an invalid %q %q", c, name, version)
		}
		en := mcpregistry.Entry{Server: srv(name, version)}
		n2, v2, err := mcpregistry.DecodeCursor(mcpregistry.EncodeCursor(en))
		if err != nil || n2 != name || v2 != version {
			t.Fatalf("round trip of %q %q: %q %q %v", name, version, n2, v2, err)
		}
	})
}

func FuzzNameVersion(f *testing.F) {
	f.Add("com.example/x", "1.0.0")
	f.Add("..a/b", "^1")
	f.Fuzz(func(t *testing.T, name, version string) {
		if mcpregistry.ValidName(name) == nil && (strings.Count(name, "/") != 1 || len(name) > mcpregistry.MaxNameLen) {
			t.Fatalf("accepted name %q", name)
		}
		if mcpregistry.ValidVersion(version) == nil && (version == "latest" || strings.ContainsAny(version, "/ ^~<>=*")) {
			t.Fatalf("accepted version %q", version)
		}
	})
}
