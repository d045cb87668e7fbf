package install

import "testing"

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		want     versionMove
	}{
		{"1.0.0", "1.0.0", moveSame},
		{"1.0.0", "1.0.0+3f2a9c1b0d4e", moveSame},
		{"1.0.0", "1.0.1", moveUp},
		{"1.9.0", "1.10.0", moveUp},
		{"2.0.0", "1.0.0", moveDown},
		{"2.0.0", "10.0.0", moveUp},
		{"v1.2.3", "1.2.4", moveUp},
		{"1.0.0-rc.1", "1.0.0", moveUp},
		{"1.0.0", "1.0.0-rc.1", moveDown},
		{"1.0.0-alpha", "1.0.0-alpha.1", moveUp},
		{"1.0.0-alpha.beta", "1.0.0-alpha.1", moveDown},
		{"1.0.0-rc.2", "1.0.0-rc.10", moveUp},
		{"1.0.0-beta", "1.0.0-alpha", moveDown},
		{"abc1234", "def5678", moveUnordered},
		{"1.0.0", "abc1234", moveUnordered},
		{"1.0", "1.1", moveUnordered},
		{"01.0.0", "1.0.1", moveUnordered},
		{"1.0.0-", "1.0.1", moveUnordered},
		{"1.0.0+", "1.0.1", moveUnordered},
		{"1.0.0-01", "1.0.1", moveUnordered},
	} {
		if got := compareVersions(tc.from, tc.to); got != tc.want {
			t.Errorf("compareVersions(%q, %q) = %d, want %d", tc.from, tc.to, got, tc.want)
		}
	}
}

// Parsing a hostile version string never panics, and ordering is
// antisymmetric for whatever parses.
func FuzzCompareVersions(f *testing.F) {
	for _, s := range []string{"1.0.0", "v2.3.4-rc.1+build.5", "1.0.0-alpha.beta", "0.0.0-0", "1..0", "18446744073709551616.0.0"} {
		f.Add(s, "1.0.0")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ab, ba := compareVersions(a, b), compareVersions(b, a)
		switch ab {
		case moveUp:
			if ba != moveDown {
				t.Fatalf("%q<%q but %q vs %q = %d", a, b, b, a, ba)
			}
		case moveDown:
			if ba != moveUp {
				t.Fatalf("%q>%q but %q vs %q = %d", a, b, b, a, ba)
			}
		case moveSame, moveUnordered:
			if ba != ab {
				t.Fatalf("%q vs %q = %d, reverse %d", a, b, ab, ba)
			}
		}
	})
}
