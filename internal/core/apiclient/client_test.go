package apiclient

import (
	"strings"
	"testing"
	"time"
)

// A lifetime is days or a Go duration, positive and at most ten years;
// anything else names the input and the accepted forms.
func TestParseExpiry(t *testing.T) {
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "12h": 12 * time.Hour, "90m": 90 * time.Minute, "3650d": MaxTokenLifetime} {
		if got, err := ParseExpiry(in); err != nil || got != want {
			t.Errorf("ParseExpiry(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, mention := range map[string]string{
		"0d": "not positive", "-1h": "not positive", "soon": "neither a number of days (30d) nor a duration (12h)",
		"1.5d": "not an integer", "3651d": "more than ten years", "100000h": "more than ten years", "": "neither",
	} {
		_, err := ParseExpiry(in)
		if err == nil || !strings.Contains(err.Error(), mention) || !strings.Contains(err.Error(), `"`+in+`"`) {
			t.Errorf("ParseExpiry(%q) = %v; want an error naming the input and %q", in, err, mention)
		}
	}
}

func FuzzParseExpiry(f *testing.F) {
	for _, s := range []string{"30d", "12h", "0d", "-1h", "1.5d", "9999999999999999999d", "1e9h", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseExpiry(s)
		if err == nil && (d <= 0 || d > MaxTokenLifetime) {
			t.Fatalf("ParseExpiry(%q) = %v: out of (0, ten years]", s, d)
		}
	})
}
