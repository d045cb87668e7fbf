// Package apiclient holds what a client of wharf's HTTP API shares with the
// server, and nothing of the server: the client command (cmd/wharf) imports
// it instead of package api, so it links neither the web framework nor the
// server's stores.
package apiclient

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxTokenLifetime bounds a token's lifetime (wharf token create --expires).
const MaxTokenLifetime = 10 * 365 * 24 * time.Hour

// ParseExpiry reads a token lifetime: a Go duration ("12h", "90m") or a
// number of days ("30d"), positive and at most ten years. The server reads
// a POST /v1/tokens "expires" with it; the client checks --expires with it
// before it sends anything.
func ParseExpiry(s string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, fmt.Errorf("expiry %q: the number of days is not an integer (e.g. 30d)", s)
		}
		if n > int(MaxTokenLifetime/(24*time.Hour)) {
			return 0, fmt.Errorf("expiry %q is more than ten years", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("expiry %q is neither a number of days (30d) nor a duration (12h)", s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("expiry %q is not positive", s)
	}
	if d > MaxTokenLifetime {
		return 0, fmt.Errorf("expiry %q is more than ten years", s)
	}
	return d, nil
}
