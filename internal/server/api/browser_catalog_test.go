package api

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/server/catalog"
)

// A catalog of 250 plugins is shown 100 a page with previous and next
// links, and searching narrows it through the server's search.
func TestBrowserCatalogPaging(t *testing.T) {
	root := t.TempDir()
	var entries []string
	for i := 0; i < 250; i++ {
		name := fmt.Sprintf("tool-%03d", i)
		cat := "build"
		if i%10 == 7 {
			cat = "lint"
		}
		writeFile(t, filepath.Join(root, "plugins", name, ".claude-plugin", "plugin.json"), `{"name": "`+name+`", "version": "1.0.0"}`)
		entries = append(entries, fmt.Sprintf(`{"name": %q, "source": "./plugins/%s", "description": "Tool number %d", "category": %q}`, name, name, i, cat))
	}
	writeFile(t, filepath.Join(root, ".claude-plugin", "marketplace.json"),
		`{"name": "big", "owner": {"name": "Big"}, "plugins": [`+strings.Join(entries, ",\n")+`]}`)
	dataDir := t.TempDir()
	e := newEnv(t, func(d *Deps) {
		d.Catalog = catalog.New(marketplace.NewManager(d.Store, marketplace.Options{Dir: filepath.Join(dataDir, "marketplaces")}))
	})
	mustStatus(t, e.do("POST", "/v1/marketplaces", e.tokens[RoleAdmin], map[string]any{
		"name": "big", "source": map[string]string{"source": "directory", "path": root}}), http.StatusCreated)

	b := newBrowser(t, e.hs.URL)
	b.signIn(e.tokens[RoleDeveloper])
	cards := func() int { return evalJS[int](b, `document.querySelectorAll(".plugin").length`) }
	if n := cards(); n != 100 {
		t.Fatalf("first page shows %d cards, want 100", n)
	}
	if h := b.text("#results"); !strings.HasPrefix(h, "1–100 of 250 matching plugins") {
		t.Errorf("heading %q", h)
	}
	if n := evalJS[int](b, `document.querySelectorAll("#prev-page").length`); n != 0 {
		t.Error("the first page links to a previous one")
	}
	b.screenshot("catalog-paged")
	b.do("next", chromedp.Click(chromedp.CSS("#next-page")), chromedp.WaitVisible(chromedp.CSS("#prev-page")))
	b.do("next", chromedp.Click(chromedp.CSS("#next-page")), chromedp.WaitVisible(chromedp.CSS(".plugins")))
	if h := b.text("#results"); !strings.HasPrefix(h, "201–250 of 250") || cards() != 50 {
		t.Errorf("last page: %q, %d cards", h, cards())
	}
	if n := evalJS[int](b, `document.querySelectorAll("#next-page").length`); n != 0 {
		t.Error("the last page links to a next one")
	}
	b.do("previous", chromedp.Click(chromedp.CSS("#prev-page")), chromedp.WaitVisible(chromedp.CSS(".plugins")))
	if h := b.text("#results"); !strings.HasPrefix(h, "101–200 of 250") {
		t.Errorf("back one page: %q", h)
	}

	// Search with a filter: 25 lint tools, on one page; the filters stay
	// in the page links.
	b.do("search",
		chromedp.SetValue(chromedp.CSS("#q"), "tool"),
		chromedp.SetValue(chromedp.CSS("#category"), "lint"),
		chromedp.Submit(chromedp.CSS("#q")),
		chromedp.WaitVisible(chromedp.CSS(`#results[data-matched="25"]`)))
	if n := cards(); n != 25 {
		t.Errorf("search shows %d cards", n)
	}
	if n := evalJS[int](b, `document.querySelectorAll("#next-page, #prev-page").length`); n != 0 {
		t.Error("a one-page result has page links")
	}
	b.do("search one", chromedp.SetValue(chromedp.CSS("#q"), "tool-117"), chromedp.SetValue(chromedp.CSS("#category"), ""), chromedp.Submit(chromedp.CSS("#q")),
		chromedp.WaitVisible(chromedp.CSS(`#results[data-count="1"]`)))
	if got := b.text(".plugin h3 a"); got != "tool-117" {
		t.Errorf("search for tool-117 found %q", got)
	}
	// Paging keeps the filters: blocked-for-me over several pages.
	b.open("/ui/?decision=allowed&cursor=200", ".plugins")
	if h := b.text("#results"); !strings.HasPrefix(h, "201–250 of 250") {
		t.Errorf("allowed filter, last page: %q", h)
	}
	if href := evalJS[string](b, `document.querySelector("#prev-page").getAttribute("href")`); href != "/ui/?cursor=100&decision=allowed" {
		t.Errorf("previous link %q", href)
	}
}
