package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/plugin"
)

// catalogID turns a plugin argument into the id of a plugin the catalog
// lists. "name@marketplace" must name a known marketplace and a plugin it
// lists; otherwise the error suggests the closest names ("did you mean
// app-deploy@demo?"). A bare "name" resolves when exactly one known
// marketplace lists it; when several do, the error lists them.
func catalogID(h *home.Home, arg string) (plugin.ID, error) {
	mgr, err := h.Marketplaces()
	if err != nil {
		return plugin.ID{}, err
	}
	cat, err := mgr.Catalog()
	if err != nil {
		return plugin.ID{}, err
	}
	return resolveInCatalog(cat, arg)
}

func resolveInCatalog(cat *marketplace.Catalog, arg string) (plugin.ID, error) {
	all := cat.All()
	if !strings.Contains(arg, "@") {
		if err := (plugin.ID{Name: arg, Source: "x"}).Validate(); err != nil {
			return plugin.ID{}, err
		}
		var found []plugin.ID
		for _, h := range all {
			if h.ID.Name == arg {
				found = append(found, h.ID)
			}
		}
		switch len(found) {
		case 1:
			return found[0], nil
		case 0:
			return plugin.ID{}, notListed(arg, idStrings(all), "no known marketplace lists a plugin named "+quote(arg))
		default:
			names := make([]string, len(found))
			for i, id := range found {
				names[i] = id.String()
			}
			return plugin.ID{}, &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeInvalidID, Object: arg,
				Err:  fmt.Errorf("%d marketplaces list a plugin named %q: %s", len(found), arg, strings.Join(names, ", ")),
				Hint: "name one of them, e.g.: " + names[0]}
		}
	}
	id, err := plugin.ParseID(arg)
	if err != nil {
		return plugin.ID{}, err
	}
	var markets []string
	known := false
	for _, l := range cat.Marketplaces() {
		markets = append(markets, l.Known.Name)
		known = known || l.Known.Name == id.Source
	}
	if !known {
		err := fmt.Errorf("marketplace %q: %w", id.Source, marketplace.ErrUnknown)
		if s := closest(id.Source, markets); len(s) > 0 {
			return plugin.ID{}, &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeNotFound, Object: arg, Err: err,
				Hint: "did you mean " + id.Name + "@" + s[0] + "? (wharf marketplace list shows the known ones)"}
		}
		if len(markets) == 0 {
			return plugin.ID{}, &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeNotFound, Object: arg, Err: err,
				Hint: "no marketplace is known yet; add one with: wharf marketplace add <source>"}
		}
		return plugin.ID{}, &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeNotFound, Object: arg, Err: err,
			Hint: "known marketplaces: " + strings.Join(markets, ", ") + "; add it with: wharf marketplace add <source>"}
	}
	hit, err := cat.Lookup(id)
	if err == nil {
		return hit.ID, nil
	}
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Type != plugin.TypeNotFound {
		return plugin.ID{}, err // the marketplace could not be read: say why
	}
	// Suggest within the marketplace first, then the same name elsewhere.
	var same, elsewhere []string
	for _, h := range all {
		if h.ID.Source == id.Source {
			same = append(same, h.ID.String())
		} else if h.ID.Name == id.Name {
			elsewhere = append(elsewhere, h.ID.String())
		}
	}
	msg := fmt.Sprintf("marketplace %q has no plugin %q", id.Source, id.Name)
	if s := closest(arg, same); len(s) > 0 {
		return plugin.ID{}, suggestion(arg, msg, s)
	}
	if len(elsewhere) > 0 {
		return plugin.ID{}, suggestion(arg, msg, elsewhere)
	}
	return plugin.ID{}, &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeNotFound, Object: arg, Err: errors.New(msg),
		Hint: fmt.Sprintf("search for it with: wharf search %s; or refresh the catalog: wharf marketplace update %s", id.Name, id.Source)}
}

// notListed is the error for a name nothing lists, with the closest
// candidates when there are any.
func notListed(arg string, candidates []string, msg string) error {
	var names []string
	for _, c := range candidates {
		name, _, _ := strings.Cut(c, "@")
		names = append(names, name)
	}
	var s []string
	for _, n := range closest(arg, names) {
		for _, c := range candidates {
			if strings.HasPrefix(c, n+"@") && !hasString(s, c) {
				s = append(s, c)
			}
		}
	}
	if len(s) > 0 {
		return suggestion(arg, msg, s)
	}
	return &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeNotFound, Object: arg, Err: errors.New(msg),
		Hint: "search the catalog with: wharf search " + arg}
}

func suggestion(arg, msg string, s []string) error {
	if len(s) > 3 {
		s = s[:3]
	}
	return &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeNotFound, Object: arg, Err: errors.New(msg),
		Hint: "did you mean " + strings.Join(s, " or ") + "?"}
}

func idStrings(hits []marketplace.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID.String()
	}
	return out
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// closest returns the candidates within a small edit distance of target
// (about one edit in three characters, case-insensitive), nearest first,
// or that contain it or are contained in it.
func closest(target string, candidates []string) []string {
	t := strings.ToLower(target)
	limit := max(1, len([]rune(t))/3)
	type scored struct {
		s string
		d int
	}
	var found []scored
	seen := map[string]bool{}
	for _, c := range candidates {
		if seen[c] {
			continue
		}
		seen[c] = true
		lc := strings.ToLower(c)
		d := editDistance(t, lc)
		if d > limit && len(t) >= 3 && (strings.Contains(lc, t) || strings.Contains(t, lc) && len(lc) >= 3) {
			d = limit
		}
		if d <= limit {
			found = append(found, scored{c, d})
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].d < found[j].d })
	out := make([]string, len(found))
	for i, f := range found {
		out[i] = f.s
	}
	return out
}

// editDistance is the optimal string alignment distance between a and b, in
// runes: insertions, deletions, substitutions and swaps of two neighbours
// ("dmeo" is one edit from "demo").
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// installedID turns a plugin argument into the id of an installed plugin:
// a bare name resolves when exactly one installed plugin has it; an id
// that is not installed gets the closest installed ones as suggestions.
func installedID(arg string, installed []plugin.ID) (plugin.ID, error) {
	names := make([]string, len(installed))
	for i, id := range installed {
		names[i] = id.String()
	}
	if !strings.Contains(arg, "@") {
		var found []plugin.ID
		for _, id := range installed {
			if id.Name == arg {
				found = append(found, id)
			}
		}
		if len(found) == 1 {
			return found[0], nil
		}
		if len(found) > 1 {
			s := make([]string, len(found))
			for i, id := range found {
				s[i] = id.String()
			}
			return plugin.ID{}, &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeInvalidID, Object: arg,
				Err:  fmt.Errorf("%d installed plugins are named %q: %s", len(found), arg, strings.Join(s, ", ")),
				Hint: "name one of them, e.g.: " + s[0]}
		}
		return plugin.ID{}, notInstalled(arg, names)
	}
	id, err := plugin.ParseID(arg)
	if err != nil {
		return plugin.ID{}, err
	}
	for _, have := range installed {
		if have == id {
			return id, nil
		}
	}
	return plugin.ID{}, notInstalled(arg, names)
}

func notInstalled(arg string, installed []string) error {
	err := &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeNotFound, Object: arg,
		Err:  fmt.Errorf("%s is not installed", arg),
		Hint: "install it with: wharf install " + arg + " (wharf list shows what is installed)"}
	s := closest(arg, installed)
	if len(s) == 0 {
		name, _, _ := strings.Cut(arg, "@")
		for _, c := range installed {
			if n, _, _ := strings.Cut(c, "@"); len(closest(name, []string{n})) > 0 {
				s = append(s, c)
			}
		}
	}
	if len(s) > 0 {
		if len(s) > 3 {
			s = s[:3]
		}
		err.Hint = "did you mean " + strings.Join(s, " or ") + "? (wharf list shows what is installed)"
	}
	return err
}
