package identity_test

import (
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/server/identity"
	"github.com/wharfhq/wharf/internal/server/tokens"
)

// ParseRole never panics; what it accepts is a non-empty group and a role.
func FuzzParseRole(f *testing.F) {
	for _, s := range []string{"platform-admins=admin", "data-team = developer", "=admin", "g=", "g=root", "a=b=c", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, r, err := identity.ParseRole(s)
		if err != nil {
			return
		}
		if g == "" || !tokens.ValidRole(string(r)) || strings.TrimSpace(g) != g {
			t.Fatalf("ParseRole(%q) = %q, %q", s, g, r)
		}
	})
}
