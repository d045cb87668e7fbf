package policy

import "regexp"

// matchRE matches like Rego's regex.match (RE2, unanchored). Patterns were
// validated when the settings were parsed.
func matchRE(pattern, s string) bool {
	re, err := regexp.Compile(pattern)
	return err == nil && re.MatchString(s)
}
