package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var linkNextRE = regexp.MustCompile(`^<([^>]+)>; rel="next"$`)

// walkArray follows a bare-array list route's Link headers from path and
// returns the key of every item, in order, and the pages it took.
func walkArray(t *testing.T, e *env, token, path string, key func(json.RawMessage) string) ([]string, int) {
	t.Helper()
	var keys []string
	pages := 0
	for path != "" {
		res := e.do("GET", path, token, nil)
		if res.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, res.status, res.body)
		}
		var items []json.RawMessage
		res.json(t, &items)
		for _, it := range items {
			keys = append(keys, key(it))
		}
		pages++
		path = ""
		if l := res.header.Get("Link"); l != "" {
			m := linkNextRE.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("Link %q", l)
			}
			path = m[1]
		}
		if pages > 50 {
			t.Fatal("paging does not end")
		}
	}
	return keys, pages
}

func field(name string) func(json.RawMessage) string {
	return func(raw json.RawMessage) string {
		var m map[string]any
		json.Unmarshal(raw, &m)
		return fmt.Sprint(m[name])
	}
}

// Every list route pages: limit bounds the answer, the cursor it gives
// walks the whole list once, and a cursor it did not give is a 400.
func TestListRoutesPage(t *testing.T) {
	needGit(t)
	e, _ := newCatalogEnv(t)
	admin := e.tokens[RoleAdmin]
	res := e.do("POST", "/v1/marketplaces", admin, map[string]any{"name": "demo", "source": map[string]string{"source": "directory", "path": demoMarketplaceDir(t)}})
	mustStatus(t, res, http.StatusCreated)
	for range 5 {
		e.createToken(RoleDeveloper)
	}
	for _, n := range []string{"ops", "qa"} {
		mustStatus(t, e.do("POST", "/v1/channels", admin, map[string]any{"name": n, "plugins": []string{"deploy@corp"}}), http.StatusCreated)
	}

	cases := []struct {
		name, path string
		key        string
		want       int // items in all
	}{
		{"tokens", "/v1/tokens?limit=2", "id", 9},
		{"marketplaces", "/v1/marketplaces?limit=1", "name", 2},
		{"channels", "/v1/channels?limit=2", "name", 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			all, pages := walkArray(t, e, admin, strings.Split(tc.path, "?")[0], field(tc.key))
			paged, n := walkArray(t, e, admin, tc.path, field(tc.key))
			if len(all) != tc.want || pages != 1 {
				t.Fatalf("unpaged: %d items in %d pages, want %d in one", len(all), pages, tc.want)
			}
			if !slices.Equal(paged, all) || n < 2 {
				t.Fatalf("paged walk %v in %d pages, unpaged %v", paged, n, all)
			}
			bad := e.do("GET", strings.Split(tc.path, "?")[0]+"?cursor=%01", admin, nil)
			if bad.status != http.StatusBadRequest || bad.apiError(t).Field != "cursor" {
				t.Fatalf("bad cursor: %d %s", bad.status, bad.body)
			}
		})
	}

	t.Run("search", func(t *testing.T) {
		all, _ := walkArray(t, e, admin, "/v1/plugins?limit=1000", field("id"))
		paged, n := walkArray(t, e, admin, "/v1/plugins?limit=2", field("id"))
		if len(all) < 4 || !slices.Equal(paged, all) || n != (len(all)+1)/2 {
			t.Fatalf("search paged %v in %d pages, whole %v", paged, n, all)
		}
		mustStatus(t, e.do("GET", "/v1/plugins?cursor=-1", admin, nil), http.StatusBadRequest)
	})

	t.Run("channel history", func(t *testing.T) {
		for _, d := range []string{"one", "two"} {
			mustStatus(t, e.do("PUT", "/v1/channels/ops", admin, map[string]any{"description": d, "plugins": []string{"deploy@corp"}}), http.StatusOK)
		}
		var whole ChannelHistory
		e.do("GET", "/v1/channels/ops/history", admin, nil).json(t, &whole)
		if len(whole.Definitions) != 3 || whole.Next != "" {
			t.Fatalf("whole history: %d definitions, next %q", len(whole.Definitions), whole.Next)
		}
		var revs []int
		builds, cursor, pages := 0, "", 0
		for ; pages < 20; pages++ {
			path := "/v1/channels/ops/history?limit=1"
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			var page ChannelHistory
			res := e.do("GET", path, admin, nil)
			mustStatus(t, res, http.StatusOK)
			res.json(t, &page)
			if len(page.Definitions) > 1 || len(page.Builds) > 1 {
				t.Fatalf("limit 1: %+v", page)
			}
			for _, d := range page.Definitions {
				revs = append(revs, d.Revision)
			}
			builds += len(page.Builds)
			if page.Next == "" {
				break
			}
			cursor = page.Next
		}
		if fmt.Sprint(revs) != "[1 2 3]" || builds != len(whole.Builds) {
			t.Fatalf("paged history: revisions %v, %d builds (whole: %d)", revs, builds, len(whole.Builds))
		}
		for _, bad := range []string{"x", "1", "-1.0", "1.x"} {
			mustStatus(t, e.do("GET", "/v1/channels/ops/history?cursor="+bad, admin, nil), http.StatusBadRequest)
		}
	})

	t.Run("revocations", func(t *testing.T) {
		for i := range 5 {
			mustStatus(t, e.do("POST", "/v1/revocations", admin, map[string]string{"plugin": fmt.Sprintf("p%d@corp", i), "version": "1", "reason": "r"}), http.StatusCreated)
		}
		var seen []string
		cursor := ""
		for pages := 0; ; pages++ {
			path := "/v1/revocations?limit=2"
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			var page RevocationList
			res := e.do("GET", path, e.tokens[RoleAgent], nil)
			mustStatus(t, res, http.StatusOK)
			res.json(t, &page)
			if len(page.Revocations) > 2 || page.PolicyVersion == "" {
				t.Fatalf("page %+v", page)
			}
			for _, r := range page.Revocations {
				seen = append(seen, r.Plugin)
			}
			if page.Next == "" {
				break
			}
			cursor = page.Next
		}
		if strings.Join(seen, ",") != "p0@corp,p1@corp,p2@corp,p3@corp,p4@corp" {
			t.Fatalf("revocations in pages: %v", seen)
		}
	})
}

// The console's revocation list comes in pages too.
func TestConsoleRevocationsPage(t *testing.T) {
	e := newEnv(t)
	admin := e.tokens[RoleAdmin]
	for i := range defaultPageSize + 3 {
		mustStatus(t, e.do("POST", "/v1/revocations", admin, map[string]string{"plugin": fmt.Sprintf("p%03d@corp", i), "version": "1", "reason": "r"}), http.StatusCreated)
	}
	u := signedIn(t, e, RoleAdmin)
	p := u.get("/ui/fleet/revocations")
	if n := strings.Count(p.body, "<tr data-id="); n != defaultPageSize {
		t.Fatalf("first page: %d rows", n)
	}
	next := regexpFind(t, p.body, `href="(/ui/fleet/revocations\?cursor=[^"]+)" rel="next"`)
	p = u.get(strings.ReplaceAll(next, "&amp;", "&"))
	if n := strings.Count(p.body, "<tr data-id="); n != 3 || strings.Contains(p.body, `rel="next"`) {
		t.Fatalf("second page: %d rows\n%s", n, p.body)
	}
}
