package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
)

// FuzzPagingCursor: any cursor and limit sent to the paged logs (audit,
// policy history) get a page or a 400 naming the field, never a 500 or a
// panic; a page holds only entries after the cursor, in order, at most
// limit of them, and its next cursor continues after its last entry.
func FuzzPagingCursor(f *testing.F) {
	e := newEnv(f)
	for range 6 {
		e.createToken(RoleCI) // each writes an audit entry
	}
	admin := e.tokens[RoleAdmin]
	for _, s := range [][2]string{{"", ""}, {"0", "1"}, {"3", "2"}, {"18446744073709551615", "1000"}, {"18446744073709551616", "5"},
		{"-1", "5"}, {"abc", "0"}, {"007", "1001"}, {"+3", " 2"}, {"3\x00", "2"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, cursor, limit string) {
		for _, path := range []string{"/v1/audit", "/v1/policy/history"} {
			body, ok := getPage(t, e, admin, path, cursor, limit)
			if !ok {
				continue
			}
			var page struct {
				Entries []struct {
					Seq uint64 `json:"seq"`
				} `json:"entries"`
				Next string `json:"next"`
			}
			if err := json.Unmarshal(body, &page); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			after := uint64(0)
			if cursor != "" {
				after, _ = strconv.ParseUint(cursor, 10, 64)
			}
			max := defaultPageSize
			if limit != "" {
				max, _ = strconv.Atoi(limit)
			}
			if len(page.Entries) > max {
				t.Fatalf("%s: %d entries for limit %d", path, len(page.Entries), max)
			}
			prev := after
			for _, en := range page.Entries {
				if en.Seq <= prev {
					t.Fatalf("%s cursor=%q: entry %d not after %d", path, cursor, en.Seq, prev)
				}
				prev = en.Seq
			}
			if page.Next != "" {
				n, err := strconv.ParseUint(page.Next, 10, 64)
				if err != nil || len(page.Entries) == 0 || n != page.Entries[len(page.Entries)-1].Seq {
					t.Fatalf("%s: next %q after %v", path, page.Next, page.Entries)
				}
			}
		}
	})
}

// getPage asks for one page of a list route with a fuzzed cursor and limit.
// A 400 must name the parameter (ok false); anything but 400 or 200 fails.
func getPage(t *testing.T, e *env, token, path, cursor, limit string) (body []byte, ok bool) {
	t.Helper()
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit != "" {
		q.Set("limit", limit)
	}
	req := httptest.NewRequest(http.MethodGet, path+"?"+q.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	switch rec.Code {
	case http.StatusBadRequest:
		var w struct{ Error APIError }
		if err := json.Unmarshal(rec.Body.Bytes(), &w); err != nil || (w.Error.Field != "cursor" && w.Error.Field != "limit") {
			t.Fatalf("%s cursor=%q limit=%q: 400 without the field: %s", path, cursor, limit, rec.Body)
		}
		return nil, false
	case http.StatusOK:
		return rec.Body.Bytes(), true
	}
	t.Fatalf("%s cursor=%q limit=%q: %d %s", path, cursor, limit, rec.Code, rec.Body)
	return nil, false
}
