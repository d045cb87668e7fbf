package api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzQueryParams feeds arbitrary values to the parsers of the query
// parameters limit, days and since: each returns a value in range or a 400
// naming its parameter with a bounded message, never a panic; an accepted
// value means what it says.
func FuzzQueryParams(f *testing.F) {
	for _, s := range []string{"", "1", "100", "1000", "1001", "0", "-1", "+5", "07", " 5", "5 ", "1e3", "0x10",
		"99999999999999999999", "3650", "3651", "abc", "2026-01-02T15:04:05Z", "2026-01-02T15:04:05.999999999+14:00",
		"2026-13-02T15:04:05Z", "2026-01-02T24:00:00Z", "2026-01-02", "9999-12-31T23:59:59-23:59", "\x00", "é" + strings.Repeat("9", 200)} {
		f.Add(s)
	}
	check := func(t *testing.T, field string, err error) {
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Field != field {
			t.Fatalf("%s: error %#v is not a 400 naming the field", field, err)
		}
		if len(ae.Message) > 400 { // at most 64 bytes of the value, each quoted in 4 or fewer
			t.Fatalf("%s: message of %d bytes echoes the hostile value", field, len(ae.Message))
		}
	}
	f.Fuzz(func(t *testing.T, v string) {
		if n, err := parseLimitParam(v); err != nil {
			check(t, "limit", err)
		} else if n < 1 || n > maxPageSize || v != "" && strconv.Itoa(n) != strings.TrimLeft(strings.TrimPrefix(v, "+"), "0") {
			t.Fatalf("limit %q read as %d", v, n)
		}
		if n, err := parseDaysParam(v); err != nil {
			check(t, "days", err)
		} else if n < 1 || n > maxStaleDays || v == "" && n != defaultStaleDays {
			t.Fatalf("days %q read as %d", v, n)
		}
		if ts, err := parseSinceParam(v); err != nil {
			check(t, "since", err)
		} else if v == "" != ts.IsZero() {
			t.Fatalf("since %q read as %v", v, ts)
		} else if v != "" {
			// The time read is the time written: formatting it back and
			// reading again gives the same instant.
			again, err := time.Parse(time.RFC3339Nano, ts.Format(time.RFC3339Nano))
			if err != nil || !again.Equal(ts) {
				t.Fatalf("since %q read as %v, which does not read back: %v", v, ts, err)
			}
		}
	})
}
