package resolver

import "testing"

func TestCrossAllowedOnlyWhatTheMarketplaceLists(t *testing.T) {
	allow := []string{"tools"}
	for _, tc := range []struct {
		from, to string
		allowOn  []string
		want     bool
	}{
		{"corp", "corp", nil, true},
		{"corp", "tools", allow, true},
		{"corp", "other", allow, false},
		{"corp", "tools", nil, false},
		{"corp", "Tools", allow, false},
	} {
		if got := CrossAllowed(tc.allowOn, tc.from, tc.to); got != tc.want {
			t.Errorf("CrossAllowed(%v, %s, %s) = %v, want %v", tc.allowOn, tc.from, tc.to, got, tc.want)
		}
	}
}
