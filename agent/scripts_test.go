package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestWords(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		want []string
	}{
		{`sh ${R}/hooks/guard.sh`, []string{"sh", "${R}/hooks/guard.sh"}},
		{`"$CLAUDE_PROJECT_DIR"/.wharf/g.sh --fast`, []string{"$CLAUDE_PROJECT_DIR/.wharf/g.sh"}},
		{`cat >> "$D/audit.log"; python3 -u x.py arg`, []string{"cat", "python3", "x.py"}},
		{`FOO=1 BAR=2 ./run.sh 2>&1 | tee out.txt`, []string{"./run.sh", "tee"}},
		{`exec node --enable-x a.js < in.json > out.json`, []string{"exec", "node", "a.js"}},
		{`echo hi && bash -c 'echo'`, []string{"echo", "bash", "echo"}},
	} {
		if got := words(c.cmd); !reflect.DeepEqual(got, c.want) {
			t.Errorf("words(%q) = %q, want %q", c.cmd, got, c.want)
		}
	}
}

// A hook that appends to a file it names is not refused by its own
// writes; the script it runs is pinned.
func TestPinScriptsSkipsRedirectTargets(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"guard.sh", "audit.log"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pins := PinScripts(`sh ./guard.sh >> audit.log`, dir, nil)
	if len(pins) != 1 || pins[0].Path != filepath.Join(dir, "guard.sh") {
		t.Fatalf("pins = %+v", pins)
	}
}
