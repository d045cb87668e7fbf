package agent

import (
	"testing"

	"github.com/wharfhq/wharf/internal/client/load"
	"github.com/wharfhq/wharf/plugin"
)

// TestReloadPicksUpPolicyChange: an admin forces a plugin off while a session
// runs; the session's next reload drops it, without a restart.
func TestReloadPicksUpPolicyChange(t *testing.T) {
	w := newWorld(t)
	w.install("a@corp", "1.0.0", smallPlugin("a"))
	w.setEnabled("a@corp", true)
	w.writeManaged(map[string]any{"enabledPlugins": map[string]bool{}})
	o := w.options()
	o.Policy = w.policy()
	r := w.runtime(o)
	s := w.load(r, CacheOnly)
	if _, ok := s.Lookup(plugin.KindCommand, "a:run"); !ok {
		t.Fatal("a:run not loaded before the policy change")
	}
	w.writeManaged(map[string]any{"enabledPlugins": map[string]bool{"a@corp": false}})
	s = w.load(r, CacheOnly)
	if _, ok := s.Lookup(plugin.KindCommand, "a:run"); ok {
		t.Fatal("a:run still loaded after the plugin was forced off and the session reloaded")
	}
	if st, _ := s.Plugin(plugin.MustParseID("a@corp")); st.Status != load.StatusDisabled || st.Forced != "off" {
		t.Fatalf("status after reload: %+v", st)
	}
}
