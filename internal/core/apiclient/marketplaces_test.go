package apiclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestNextPath(t *testing.T) {
	for link, want := range map[string]string{
		``: "",
		`</v1/marketplaces?cursor=b&limit=1>; rel="next"`: "/v1/marketplaces?cursor=b&limit=1",
		`<https://evil.example/v1/x>; rel="next"`:         "",
		`<//evil.example/v1/x>; rel="next"`:               "",
		`</v1/a>; rel="prev", </v1/b>; rel="next"`:        "/v1/b",
		`</other>; rel="next"`:                            "",
		`/v1/a; rel="next"`:                               "",
		`</v1/a>`:                                         "",
	} {
		if got := nextPath(link); got != want {
			t.Errorf("nextPath(%q) = %q, want %q", link, got, want)
		}
	}
}

func FuzzNextPath(f *testing.F) {
	for _, s := range []string{``, `</v1/m?cursor=x>; rel="next"`, `<//h/v1>; rel="next"`, `<`, `>;rel="next"`, "</v1/\x00>; rel=\"next\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, link string) {
		p := nextPath(link)
		if p != "" && (!strings.HasPrefix(p, "/v1/") || strings.HasPrefix(p, "//")) {
			t.Fatalf("nextPath(%q) = %q: not a path on the same server", link, p)
		}
	})
}

// Marketplaces follows the server's pages.
func TestMarketplacesFollowsPages(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Query().Get("cursor") {
		case "":
			w.Header().Set("Link", `</v1/marketplaces?cursor=a>; rel="next"`)
			_ = json.NewEncoder(w).Encode([]Marketplace{{Name: "a", Plugins: 1}})
		case "a":
			_ = json.NewEncoder(w).Encode([]Marketplace{{Name: "b", Plugins: 2, Error: "broken"}})
		}
	}))
	defer hs.Close()
	cl, err := New(hs.URL, "tok", nil)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := cl.Marketplaces(context.Background())
	if err != nil || len(ms) != 2 || ms[0].Name != "a" || ms[1].Error != "broken" {
		t.Fatalf("%+v %v", ms, err)
	}
}
