package api

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// Paging of the list routes. Every list route takes limit (1 to
// maxPageSize) and cursor (opaque: what the previous page gave). Routes
// whose answer is an object say the next page's cursor in its "next"
// field; routes whose answer is a bare JSON array say it in a Link header
// (rel="next"), and default to the largest page so that a client that
// reads one array still reads a list of ordinary size whole.

// maxCursor bounds a cursor's length.
const maxCursor = 512

// parseLimitDefault is parseLimit with another default.
func parseLimitDefault(c echo.Context, def int) (int, error) {
	if c.QueryParam("limit") == "" {
		return def, nil
	}
	return parseLimit(c)
}

// keyCursor reads a cursor that is the key of the last item of a page.
func keyCursor(c echo.Context) (string, error) {
	v := c.QueryParam("cursor")
	if len(v) > maxCursor || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", badField("cursor", "cursor %q is not one this server returned; start again without it", trimForMessage(v))
	}
	return v, nil
}

// offsetCursor reads a cursor that is a position in a ranked list.
func offsetCursor(c echo.Context) (int, error) {
	v := c.QueryParam("cursor")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > maxOffset {
		return 0, badField("cursor", "cursor %q is not one this server returned; start again without it", trimForMessage(v))
	}
	return n, nil
}

// maxOffset bounds how deep an offset cursor goes.
const maxOffset = 1_000_000

// pageByKey sorts items by key and returns at most limit of those whose
// key is after cursor, with the cursor of the next page ("" on the last).
func pageByKey[T any](items []T, key func(T) string, after string, limit int) ([]T, string) {
	slices.SortStableFunc(items, func(a, b T) int { return strings.Compare(key(a), key(b)) })
	i := 0
	if after != "" {
		i, _ = slices.BinarySearchFunc(items, after, func(x T, k string) int { return strings.Compare(key(x), k) })
		for i < len(items) && key(items[i]) <= after {
			i++
		}
	}
	items = items[i:]
	if len(items) > limit {
		return items[:limit], key(items[limit-1])
	}
	return items, ""
}

// timeKey orders by time, then id: fixed width, so that strings compare
// as the times do.
func timeKey(t time.Time, id string) string {
	return t.UTC().Format("20060102T150405.000000000Z") + "_" + id
}

// nextLink sets the Link header of the next page: the request's URL with
// cursor set to next.
func nextLink(c echo.Context, next string) {
	if next == "" {
		return
	}
	u := *c.Request().URL
	q := u.Query()
	q.Set("cursor", next)
	u.RawQuery = q.Encode()
	c.Response().Header().Set("Link", "<"+(&url.URL{Path: u.Path, RawQuery: u.RawQuery}).String()+`>; rel="next"`)
}
