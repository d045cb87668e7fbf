package hooks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/agent/internal/proctree"
	"github.com/wharfhq/wharf/plugin"
)

// ifSelects evaluates h.If against ev: whether the hook runs, and, when it
// does not for a reason other than a tool call the rule does not match, why.
func (r *Runner) ifSelects(ev Event, h Hook) (bool, string) {
	rule, err := plugin.ParseHookIf(h.If)
	if err != nil {
		return false, "if: " + err.Error() + "; the hook does not run"
	}
	if !plugin.IfEvaluated(ev.Name) {
		return false, fmt.Sprintf("if %q: %s has no tool call, so, as in Claude Code, the hook never runs", h.If, ev.Name)
	}
	var in struct {
		ToolName  string          `json:"tool_name"`
		ToolInput json.RawMessage `json:"tool_input"`
	}
	_ = json.Unmarshal(ev.Raw, &in)
	home := r.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	dir := h.Dir
	if dir == "" {
		var c struct {
			Cwd string `json:"cwd"`
		}
		_ = json.Unmarshal(ev.Raw, &c)
		dir = c.Cwd
	}
	return rule.Match(in.ToolName, in.ToolInput, dir, home), ""
}

// firstRun records that h runs in ev's session and reports whether it is
// the first time for the life of the Runner.
func (r *Runner) firstRun(ev Event, h Hook) bool {
	var s struct {
		SessionID string `json:"session_id"`
	}
	_ = json.Unmarshal(ev.Raw, &s)
	key := s.SessionID + "\x00" + h.ID + "\x00" + h.Command + "\x00" + h.URL + "\x00" + h.MCPServer + "\x00" + h.MCPTool
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.once[key] {
		return false
	}
	if r.OnceDir != "" && s.SessionID != "" {
		sum := sha256.Sum256([]byte(key))
		if err := os.MkdirAll(r.OnceDir, 0o700); err == nil {
			f, err := os.OpenFile(filepath.Join(r.OnceDir, hex.EncodeToString(sum[:16])), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if errors.Is(err, fs.ErrExist) {
				return false
			}
			if err == nil {
				f.Close()
			}
		}
	}
	if r.once == nil {
		r.once = map[string]bool{}
	}
	r.once[key] = true
	return true
}

// startBackground starts an Async command hook and returns once it is
// started: the event JSON is its stdin (a file, so nothing of this process
// has to outlive Run to feed it), its output is discarded, and it runs in
// its own process group, killed with it after its timeout while this
// process lives. Wait waits for such hooks.
func (r *Runner) startBackground(ev Event, h Hook, pc *agent.PreparedCommand) (err error) {
	// pc (the verified copies of the hook's scripts) lives as long as the
	// hook runs.
	defer func() {
		if err != nil {
			pc.Close()
		}
	}()
	timeout, shell, env := r.procSettings(h.Timeout)
	in, err := os.CreateTemp("", "wharf-hook-event-*")
	if err != nil {
		return err
	}
	defer in.Close()
	// Unlinked at once: the open descriptor the hook inherits is all it needs.
	_ = os.Remove(in.Name())
	if _, err := in.Write(ev.Raw); err != nil {
		return err
	}
	if _, err := in.Seek(0, 0); err != nil {
		return err
	}
	cmd := exec.Command(shell, "-c", pc.Command)
	cmd.Env = append(append(append([]string(nil), env...), h.Env...), "WHARF_HOOK_EVENT="+string(ev.Name))
	cmd.Dir = h.Dir
	cmd.Stdin = in
	tree := proctree.New(cmd)
	if err := tree.Start(); err != nil {
		return err
	}
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		defer pc.Close()
		done := make(chan struct{})
		go func() { _ = tree.Wait(); close(done) }()
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			_ = tree.Kill()
			<-done
		}
	}()
	return nil
}

// Wait waits for the Async hooks started so far to finish (or be killed at
// their timeout).
func (r *Runner) Wait() { r.bg.Wait() }
