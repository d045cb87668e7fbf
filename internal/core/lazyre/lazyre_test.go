package lazyre

import (
	"strings"
	"sync"
	"testing"
)

// New compiles nothing: a malformed expression is accepted until used,
// and then panics naming it; a good one matches as regexp does, from many
// goroutines at once.
func TestCompiledOnFirstUse(t *testing.T) {
	bad := New(`^[a-z`)
	if bad.String() != `^[a-z` {
		t.Fatalf("String = %q", bad.String())
	}
	func() {
		defer func() {
			r := recover()
			if r == nil || !strings.Contains(r.(string), "^[a-z") {
				t.Fatalf("first use of a malformed expression: recover() = %v", r)
			}
		}()
		bad.MatchString("x")
	}()

	re := New(`^([a-z]+)-(\d+)$`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if !re.MatchString("abc-12") || re.MatchString("ABC-12") {
				t.Error("MatchString")
			}
		})
	}
	wg.Wait()
	if m := re.FindStringSubmatch("abc-12"); len(m) != 3 || m[1] != "abc" || m[2] != "12" {
		t.Errorf("FindStringSubmatch = %q", m)
	}
	if got := re.ReplaceAllString("abc-12", "$2"); got != "12" {
		t.Errorf("ReplaceAllString = %q", got)
	}
	if got := re.ReplaceAllStringFunc("abc-12", strings.ToUpper); got != "ABC-12" {
		t.Errorf("ReplaceAllStringFunc = %q", got)
	}
	if re.Regexp() != re.Regexp() {
		t.Error("compiled twice")
	}
}

// Building one costs a few allocations, whatever the expression: the
// compile (hundreds for a bounded repetition) waits for the first use.
func TestNewDoesNotCompile(t *testing.T) {
	allocs := testing.AllocsPerRun(20, func() { New(`^[a-z][a-z0-9_]{0,62}$`) })
	if allocs > 5 {
		t.Fatalf("New allocates %v times; it must not compile", allocs)
	}
}
