package web

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Page names, one per template in templates/ (besides the layout).
const (
	PageSignIn  = "signin"
	PageCatalog = "catalog"
	PagePlugin  = "plugin"
	PagePolicy  = "policy"
	PageLayer   = "layer"
	PageAudit   = "audit"
	PageError   = "error"
)

var pages = []string{PageSignIn, PageCatalog, PagePlugin, PagePolicy, PageLayer, PageAudit, PageError,
	PageInventory, PageFleetPlugin, PageMarketplaces, PageMarketplaceRemove, PageTokens, PageTokenRevoke, PageLayerDelete, PageMachine, PageRevocations, PageRevocation, PageChannels, PageChannel, PageApprovals, PageRequests, PageToolPins}

// Renderer renders the console's pages. It is immutable after NewRenderer
// and safe for concurrent use.
type Renderer struct {
	pages map[string]*template.Template
}

var funcs = template.FuncMap{
	"join": strings.Join,
	// short keeps the head of a long identifier (digests, versions) for a
	// table cell; the full value goes in a title attribute.
	"short": func(s string, n int) string {
		if len(s) <= n {
			return s
		}
		return s[:n] + "…"
	},
}

// NewRenderer parses every page together with the shared layout.
func NewRenderer() (*Renderer, error) {
	r := &Renderer{pages: map[string]*template.Template{}}
	for _, p := range pages {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/chart.html", "templates/"+p+".html")
		if err != nil {
			return nil, fmt.Errorf("web: parse page %s: %w", p, err)
		}
		r.pages[p] = t
	}
	return r, nil
}

// Render writes page with data. The page is rendered into memory first, so
// a template error never leaves half a page on w.
func (r *Renderer) Render(w io.Writer, page string, data any) error {
	t, ok := r.pages[page]
	if !ok {
		return fmt.Errorf("web: no page %q", page)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", data); err != nil {
		return fmt.Errorf("web: render %s: %w", page, err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// Static returns the embedded assets (style.css, ...) as a file system
// rooted at the static directory.
func Static() fs.FS {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		// The directory is embedded at build time; Sub fails only on an
		// invalid name, which would be a bug here.
		panic(err)
	}
	return sub
}

// StaticHandler serves Static under prefix (e.g. "/ui/static/"). Assets are
// embedded in the binary, so they may be cached for a day.
func StaticHandler(prefix string) http.Handler {
	fsrv := http.StripPrefix(prefix, http.FileServerFS(Static()))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=86400")
		fsrv.ServeHTTP(w, r)
	})
}
