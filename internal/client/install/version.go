package install

import (
	"strconv"
	"strings"
)

// semver is a parsed semantic version (semver.org 2.0.0): MAJOR.MINOR.PATCH
// with optional pre-release identifiers; build metadata is dropped, as it
// does not order versions. A leading "v" is accepted.
type semver struct {
	num [3]uint64
	pre []string
}

// parseSemver parses s, or reports false when s is not a semantic version.
func parseSemver(s string) (semver, bool) {
	s = strings.TrimPrefix(s, "v")
	if i := strings.IndexByte(s, '+'); i >= 0 {
		if !validIdents(s[i+1:], false) {
			return semver{}, false
		}
		s = s[:i]
	}
	var v semver
	core := s
	if i := strings.IndexByte(s, '-'); i >= 0 {
		core = s[:i]
		if !validIdents(s[i+1:], true) {
			return semver{}, false
		}
		v.pre = strings.Split(s[i+1:], ".")
	}
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return semver{}, false
	}
	for i, p := range parts {
		if !numeric(p) || (len(p) > 1 && p[0] == '0') {
			return semver{}, false
		}
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return semver{}, false
		}
		v.num[i] = n
	}
	return v, true
}

// validIdents checks dot-separated identifiers of [0-9A-Za-z-]; pre-release
// numeric identifiers have no leading zeros.
func validIdents(s string, pre bool) bool {
	if s == "" {
		return false
	}
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return false
		}
		for _, c := range id {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
				return false
			}
		}
		if pre && numeric(id) && len(id) > 1 && id[0] == '0' {
			return false
		}
	}
	return true
}

func numeric(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// compare orders a and b by semver precedence: -1, 0 or +1.
func (a semver) compare(b semver) int {
	for i := range a.num {
		if a.num[i] != b.num[i] {
			if a.num[i] < b.num[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a.pre) == 0 && len(b.pre) == 0:
		return 0
	case len(a.pre) == 0:
		return 1 // a release follows its pre-releases
	case len(b.pre) == 0:
		return -1
	}
	for i := 0; i < len(a.pre) && i < len(b.pre); i++ {
		x, y := a.pre[i], b.pre[i]
		if x == y {
			continue
		}
		xn, yn := numeric(x), numeric(y)
		switch {
		case xn && yn:
			xi, _ := strconv.ParseUint(x, 10, 64)
			yi, _ := strconv.ParseUint(y, 10, 64)
			if xi < yi {
				return -1
			}
			return 1
		case xn:
			return -1 // numeric identifiers sort before alphanumeric ones
		case yn:
			return 1
		case x < y:
			return -1
		default:
			return 1
		}
	}
	switch {
	case len(a.pre) < len(b.pre):
		return -1
	case len(a.pre) > len(b.pre):
		return 1
	}
	return 0
}

// versionMove is how an update moves between two versions.
type versionMove int

const (
	moveSame      versionMove = iota // the same version (possibly other content)
	moveUp                           // to a higher version
	moveDown                         // to a lower version
	moveUnordered                    // cannot tell: a version is not semver
)

// compareVersions says how going from one version to another moves. wharf
// marks a second content of the same version with a "+<hash>" suffix,
// which semver precedence ignores.
func compareVersions(from, to string) versionMove {
	if from == to {
		return moveSame
	}
	a, okA := parseSemver(from)
	b, okB := parseSemver(to)
	if !okA || !okB {
		return moveUnordered
	}
	switch a.compare(b) {
	case -1:
		return moveUp
	case 1:
		return moveDown
	}
	return moveSame
}

// isSemver reports whether v parses as MAJOR.MINOR.PATCH[-pre][+build].
func isSemver(v string) bool {
	_, ok := parseSemver(v)
	return ok
}
