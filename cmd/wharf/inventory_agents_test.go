package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/api"
	"github.com/wharfhq/wharf/internal/server/catalog"
	"github.com/wharfhq/wharf/internal/testutil/agentcli"
	"github.com/wharfhq/wharf/internal/testutil/claudetest"
)

// TestInventoryReportFromAgents has the real Copilot CLI, Codex and Gemini
// CLI install a plugin from a wharf channel on loopback (added by its
// token-less URL, the token in git's credential store or GIT_ASKPASS), and
// the real OpenCode fetch it from a public channel's skill index listed
// in its configuration, then reports their homes as they left them: the
// plugin is listed under the agent's client kind with the digest the
// channel pins.
func TestInventoryReportFromAgents(t *testing.T) {
	for _, a := range []agentcli.Agent{agentcli.Copilot, agentcli.Codex, agentcli.Gemini, agentcli.OpenCode} {
		t.Run(a.Name, func(t *testing.T) {
			cli := agentcli.Find(t, a)
			claudetest.Lock(t, false)
			if _, err := exec.LookPath("git"); err != nil {
				t.Skip("git is not installed")
			}
			data := t.TempDir()
			st, err := store.OpenBolt(filepath.Join(data, "state.db"), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			mgr := marketplace.NewManager(st, marketplace.Options{Dir: filepath.Join(data, "marketplaces")})
			srv, err := api.New(api.Deps{Store: st, Policy: api.PolicyEngine, RateLimit: -1, Catalog: catalog.New(mgr), ChannelDir: filepath.Join(data, "channels")})
			if err != nil {
				t.Fatal(err)
			}
			admin, _, err := api.EnsureAdminToken(st, "", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			hs := httptest.NewServer(srv.Handler())
			t.Cleanup(hs.Close)
			mkt := localMarketplace(t, t.TempDir(), "corp")
			if _, err := catalog.New(mgr).AddMarketplace(t.Context(), "corp", json.RawMessage(`{"source":"directory","path":"`+mkt+`"}`)); err != nil {
				t.Fatal(err)
			}
			chName := "approved"
			if a.Name == "opencode" {
				// OpenCode sends no credentials for a skills URL: the
				// channel is public.
				chName = "open"
				req, _ := http.NewRequest("POST", hs.URL+"/v1/channels", strings.NewReader(`{"name": "open", "plugins": ["tool@corp"], "public": true}`))
				req.Header.Set("Authorization", "Bearer "+admin)
				req.Header.Set("Content-Type", "application/json")
				res, err := http.DefaultClient.Do(req)
				if err != nil || res.StatusCode != 201 {
					t.Fatalf("create a public channel: %v %v", res, err)
				}
				res.Body.Close()
			}
			req, _ := http.NewRequest("GET", hs.URL+"/v1/channels/"+chName, nil)
			req.Header.Set("Authorization", "Bearer "+admin)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var view api.ChannelView
			err = json.NewDecoder(res.Body).Decode(&view)
			res.Body.Close()
			if err != nil || res.StatusCode != 200 {
				t.Fatalf("channel: %d %v", res.StatusCode, err)
			}
			pin := ""
			for _, en := range view.Entries {
				if en.Name == "tool" {
					pin = en.Digest
				}
			}
			if pin == "" {
				t.Fatalf("the channel pins no tool: %+v", view)
			}

			home := cli.Home(t)
			chURL := hs.URL + "/git/approved.git"
			u, _ := url.Parse(chURL)
			writeFile(t, filepath.Join(home, ".git-credentials"), u.Scheme+"://wharf:"+admin+"@"+u.Host+"\n")
			writeFile(t, filepath.Join(home, ".gitconfig"), "[credential]\n\thelper = store\n")
			agentHome, flag := filepath.Join(home, ".copilot"), "--copilot-home"
			switch a.Name {
			case "copilot":
				cli.Must(t, home, t.TempDir(), "plugin", "marketplace", "add", chURL)
				cli.Must(t, home, t.TempDir(), "plugin", "install", "tool@approved")
			case "codex":
				cli.Must(t, home, t.TempDir(), "plugin", "marketplace", "add", chURL)
				cli.Must(t, home, t.TempDir(), "plugin", "add", "tool@approved")
				agentHome, flag = filepath.Join(home, ".codex"), "--codex-home"
			case "gemini":
				// Gemini CLI runs git without credential helpers: the
				// token comes from GIT_ASKPASS.
				askpass := filepath.Join(t.TempDir(), "askpass")
				writeFile(t, askpass, "#!/bin/sh\necho \"$WHARF_TEST_TOKEN\"\n")
				if err := os.Chmod(askpass, 0o700); err != nil {
					t.Fatal(err)
				}
				cli.Extra = append(cli.Extra, "GIT_ASKPASS="+askpass, "WHARF_TEST_TOKEN="+admin)
				cli.Must(t, home, t.TempDir(), "extensions", "install", hs.URL+"/git/approved/gemini/tool.git", "--consent")
				agentHome, flag = filepath.Join(home, ".gemini"), "--gemini-home"
			case "opencode":
				writeFile(t, filepath.Join(home, ".config/opencode/opencode.json"), `{"$schema": "https://opencode.ai/config.json", "skills": {"urls": ["`+hs.URL+`/git/open/opencode/skills/"]}}`)
				if out := cli.Must(t, home, t.TempDir(), "debug", "skill"); !strings.Contains(out, filepath.Join(home, ".cache/opencode/skills/tool/SKILL.md")) {
					t.Fatalf("opencode did not load tool from the channel:\n%s", out)
				}
				// The report reads both OpenCode directories; the home
				// compared is the whole of the user's.
				agentHome, flag = home, "--opencode-home"
			}

			rec := newReportRecorder(t, nil)
			c := newPolicyClient(t, "tok-1")
			before := agentFiles(t, agentHome)
			code, out, stderr := c.run("inventory", "report", "--from", a.Name, flag, agentHome, "--server", rec.hs.URL)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, stderr)
			}
			rep := rec.last(t)
			p, ok := pluginIn(rep, "tool@"+chName)
			if !ok || p.Digest != pin || p.Version != "1.0.0" || p.State != inventory.StateActive || rep.Client.Kind != a.Name {
				t.Fatalf("report %+v, want tool@%s with the channel's pin %s", rep, chName, pin)
			}
			// The agent's home is read, not changed (but for wharf's
			// machine id beside it).
			after := agentFiles(t, agentHome)
			delete(after, "wharf-machine-id")
			delete(after, filepath.Join(".config", "opencode", "wharf-machine-id"))
			for k, v := range before {
				if after[k] != v {
					t.Fatalf("the report changed %s", k)
				}
			}
			if len(after) != len(before) {
				t.Fatalf("the report added files to the agent's home: %d files before, %d after", len(before), len(after))
			}
		})
	}
}

// agentFiles is every regular file under dir with its content.
func agentFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && !strings.Contains(p, string(filepath.Separator)+"logs"+string(filepath.Separator)) {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			m[rel] = string(b)
		}
		return nil
	})
	return m
}
