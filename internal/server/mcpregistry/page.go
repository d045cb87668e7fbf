package mcpregistry

import (
	"encoding/base64"
	"sort"
	"strings"
	"time"
)

// Paging bounds.
const (
	DefaultLimit = 30
	MaxLimit     = 100
	maxCursorLen = 1024
)

// Query is a list request: the parameters of GET /v0.1/servers.
type Query struct {
	Cursor       string
	Limit        int
	Search       string     // substring of the name, any case
	UpdatedSince *time.Time // only entries updated since
	Version      string     // "latest", an exact version, or ""
}

// Finish orders entries by name then version and marks each name's latest
// version: the one published last (the greater version on a tie).
func Finish(entries []Entry) {
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := entries[i].Server, entries[j].Server
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Version < b.Version
	})
	latest := map[string]int{}
	for i, e := range entries {
		entries[i].IsLatest = false
		j, ok := latest[e.Server.Name]
		if !ok || e.Published.After(entries[j].Published) || e.Published.Equal(entries[j].Published) {
			latest[e.Server.Name] = i
		}
	}
	for _, i := range latest {
		entries[i].IsLatest = true
	}
}

// EncodeCursor is the opaque cursor that resumes a list after e.
func EncodeCursor(e Entry) string {
	return base64.RawURLEncoding.EncodeToString([]byte(e.Server.Name + "\n" + e.Server.Version))
}

// DecodeCursor reads a cursor EncodeCursor made; anything else is a
// *FieldError.
func DecodeCursor(c string) (name, version string, err error) {
	bad := func(why string) error {
		return fieldErr("cursor", "%s; pass the metadata.nextCursor of the previous page as it is, or no cursor for the first page", why)
	}
	if len(c) > maxCursorLen {
		return "", "", bad("the cursor is too long")
	}
	raw, derr := base64.RawURLEncoding.DecodeString(c)
	if derr != nil {
		return "", "", bad("the cursor is not one this registry made")
	}
	name, version, ok := strings.Cut(string(raw), "\n")
	if !ok || ValidName(name) != nil || ValidVersion(version) != nil {
		return "", "", bad("the cursor is not one this registry made")
	}
	return name, version, nil
}

// List pages entries (as Finish left them) by q: those after the cursor
// that match the search, the time and the version, at most q.Limit of
// them, and the cursor of the next page ("" after the last).
func List(entries []Entry, q Query) ([]Entry, string, error) {
	limit := q.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	if limit < 1 || limit > MaxLimit {
		return nil, "", fieldErr("limit", "%d is not between 1 and %d", q.Limit, MaxLimit)
	}
	if len(q.Search) > MaxNameLen {
		return nil, "", fieldErr("search", "%d bytes; a server name has at most %d", len(q.Search), MaxNameLen)
	}
	if q.Version != "" && q.Version != "latest" {
		if err := ValidVersion(q.Version); err != nil {
			return nil, "", err
		}
	}
	start := 0
	if q.Cursor != "" {
		name, version, err := DecodeCursor(q.Cursor)
		if err != nil {
			return nil, "", err
		}
		start = sort.Search(len(entries), func(i int) bool {
			s := entries[i].Server
			return s.Name > name || s.Name == name && s.Version > version
		})
	}
	search := strings.ToLower(q.Search)
	var out []Entry
	for i := start; i < len(entries); i++ {
		e := entries[i]
		switch {
		case search != "" && !strings.Contains(strings.ToLower(e.Server.Name), search):
			continue
		case q.UpdatedSince != nil && e.Updated.Before(*q.UpdatedSince):
			continue
		case q.Version == "latest" && !e.IsLatest:
			continue
		case q.Version != "" && q.Version != "latest" && e.Server.Version != q.Version:
			continue
		}
		if len(out) == limit {
			return out, EncodeCursor(out[len(out)-1]), nil
		}
		out = append(out, e)
	}
	return out, "", nil
}

// Versions is every version of name, newest first.
func Versions(entries []Entry, name string) []Entry {
	var out []Entry
	for _, e := range entries {
		if e.Server.Name == name {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Published.Equal(out[j].Published) {
			return out[i].Published.After(out[j].Published)
		}
		return out[i].Server.Version > out[j].Server.Version
	})
	return out
}

// Get is one version of name ("latest": the latest).
func Get(entries []Entry, name, version string) (Entry, bool) {
	for _, e := range entries {
		if e.Server.Name == name && (e.Server.Version == version || version == "latest" && e.IsLatest) {
			return e, true
		}
	}
	return Entry{}, false
}
