package progress

import (
	"bytes"
	"strings"
	"testing"
	"unicode"
)

// FuzzBarWrite feeds hostile progress text to a bar: it never panics, and
// what it draws from the text is letters, digits and the bar's own
// punctuation, never a control character a server could use to rewrite
// the terminal.
func FuzzBarWrite(f *testing.F) {
	f.Add([]byte("Enumerating objects: 5, done.\nCounting objects:  20% (1/5)\r"))
	f.Add([]byte("Compressing objects: 100% (3/3), done.\nTotal 5 (delta 0), reused 0 (delta 0), pack-reused 0\n"))
	f.Add([]byte("Receiving objects:  45% (123/270)\r"))
	f.Add([]byte("\x1b[2JEvil\x07: 99% (1/1)\r"))
	f.Add([]byte(strings.Repeat("x", 5000)))
	f.Fuzz(func(t *testing.T, data []byte) {
		var term bytes.Buffer
		b := newBar(&term, "fetching", 0)
		b.Write(data)
		b.mu.Lock()
		phase := b.phase
		b.mu.Unlock()
		for _, r := range phase {
			if !(unicode.IsLetter(r) && r < unicode.MaxASCII || unicode.IsDigit(r) || strings.ContainsRune(" %()/", r)) {
				t.Fatalf("phase %q has %q", phase, r)
			}
		}
		if len(b.line) > 4096 {
			t.Fatalf("bar keeps %d bytes of an unended line", len(b.line))
		}
	})
}
