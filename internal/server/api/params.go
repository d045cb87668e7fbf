package api

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// Query parameters are outside input: each has one parser here, returning
// the value or a 400 naming the parameter, never a panic. The value is
// echoed in the message only up to maxEchoedParam bytes.

const (
	defaultStaleDays = 30
	maxStaleDays     = 3650
	maxEchoedParam   = 64
)

// parseLimitParam reads `limit`: a page size from 1 to maxPageSize;
// defaultPageSize when absent.
func parseLimitParam(v string) (int, error) {
	if v == "" {
		return defaultPageSize, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxPageSize {
		return 0, badField("limit", "limit %q must be an integer from 1 to %d", shortParam(v), maxPageSize)
	}
	return n, nil
}

// parseDaysParam reads `days`: whole days from 1 to maxStaleDays;
// defaultStaleDays when absent.
func parseDaysParam(v string) (int, error) {
	if v == "" {
		return defaultStaleDays, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxStaleDays {
		return 0, badField("days", "days %q must be a whole number of days from 1 to %d", shortParam(v), maxStaleDays)
	}
	return n, nil
}

// parseSinceParam reads `since`: an RFC 3339 time; the zero time when
// absent.
func parseSinceParam(v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, badField("since", "since %q is not an RFC 3339 time such as 2026-01-02T15:04:05Z", shortParam(v))
	}
	return t, nil
}

// shortParam shortens a hostile value for an error message, on a rune
// boundary.
func shortParam(v string) string {
	if len(v) <= maxEchoedParam {
		return v
	}
	cut := maxEchoedParam
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut] + "..."
}
