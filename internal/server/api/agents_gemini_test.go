package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/internal/server/channel"
	"github.com/wharfhq/wharf/internal/testutil/agentcli"
)

// geminiOmit is what Gemini CLI's copy of an extension served by a wharf
// channel holds beside the plugin the channel pins: the manifest wharf
// generates and Gemini CLI's install metadata.
var geminiOmit = []string{channel.GeminiManifestFile, ".gemini-extension-install.json"}

// TestGeminiUsesChannel drives the real Gemini CLI against a wharf channel
// on loopback: it installs the channel's deploy as an extension from the
// channel's extension repository (token-less URL; Gemini CLI runs git with
// credential helpers and the user's git configuration off, so the token
// comes from GIT_ASKPASS), with the digest the channel pins and the manifest
// wharf generated. With wharf's export of a policy that allows only the
// channel in Gemini CLI's system settings, it refuses the URL with a token
// in it and an extension from a local directory, and installs from the
// channel.
func TestGeminiUsesChannel(t *testing.T) {
	cli := agentcli.Find(t, agentcli.Gemini)
	needGit(t)
	e, _ := newCatalogEnv(t)
	dev := e.tokens[RoleDeveloper]
	home, cwd := cli.Home(t), t.TempDir()
	askpass := filepath.Join(t.TempDir(), "askpass")
	if err := os.WriteFile(askpass, []byte("#!/bin/sh\ncase \"$1\" in Username*) echo wharf;; *) echo \"$WHARF_TEST_TOKEN\";; esac\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	cli.Extra = append(cli.Extra, "GIT_ASKPASS="+askpass, "WHARF_TEST_TOKEN="+dev)
	var view ChannelView
	e.do("GET", "/v1/channels/approved", dev, nil).json(t, &view)
	pins := map[string]string{}
	for _, en := range view.Entries {
		pins[en.Name] = en.Digest
	}
	extURL := e.hs.URL + "/git/" + channel.GeminiPath("approved", "deploy")

	cli.Must(t, home, cwd, "extensions", "install", extURL, "--consent")
	dir := filepath.Join(home, ".gemini/extensions/deploy")
	tree, err := trust.DigestOmitting(dir, geminiOmit...)
	if err != nil {
		t.Fatalf("gemini installed no copy of deploy: %v", err)
	}
	if tree.Digest != pins["deploy"] {
		t.Fatalf("gemini's copy of deploy has digest %s, the channel pins %s", tree.Digest, pins["deploy"])
	}
	var man channel.GeminiManifest
	b, err := os.ReadFile(filepath.Join(dir, channel.GeminiManifestFile))
	if err != nil || json.Unmarshal(b, &man) != nil || man.Name != "deploy" || man.Version == "" {
		t.Fatalf("gemini-extension.json: %v\n%s", err, b)
	}
	meta, err := os.ReadFile(filepath.Join(dir, ".gemini-extension-install.json"))
	if err != nil || !strings.Contains(string(meta), extURL) || strings.Contains(string(meta), dev) {
		t.Fatalf("install metadata (%v): %s", err, meta)
	}
	// Gemini CLI lists it (on stderr, as it prints lists).
	if out := cli.Must(t, home, cwd, "extensions", "list", "-o", "json"); !strings.Contains(out, `"name": "deploy"`) {
		t.Fatalf("extensions list:\n%s", out)
	}
	// A plugin the channel does not serve is not found.
	if out, code := cli.Run(t, cli.Home(t), cwd, "extensions", "install", e.hs.URL+"/git/"+channel.GeminiPath("approved", "nosuch"), "--consent"); code == 0 {
		t.Fatalf("gemini installed a plugin the channel does not serve: %s", out)
	}

	eng, err := policy.NewEngine([]policy.Layer{{Name: "org", Settings: []byte(`{"strictKnownMarketplaces": [{"source": "git", "url": "` + e.channelURL("approved", "") + `"}]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := eng.ExportGemini().JSON()
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := cli.ManagedOverride(t, doc); !ok {
		t.Skipf("skipping the managed part: %s", why)
	}
	h2 := cli.Home(t)
	tokenURL := strings.Replace(extURL, "http://", "http://wharf:"+dev+"@", 1)
	out, code := cli.Run(t, h2, cwd, "extensions", "install", tokenURL, "--consent")
	if code == 0 || !strings.Contains(out, "allowedExtensions") {
		t.Fatalf("gemini installed from the channel by a URL with a token in it, which the policy does not name (exit %d): %s", code, out)
	}
	local := t.TempDir()
	if err := os.WriteFile(filepath.Join(local, channel.GeminiManifestFile), []byte(`{"name": "local", "version": "1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := cli.Run(t, h2, cwd, "extensions", "install", local, "--consent"); code == 0 || !strings.Contains(out, "allowedExtensions") {
		t.Fatalf("gemini installed an extension from a directory the policy does not allow (exit %d): %s", code, out)
	}
	cli.Must(t, h2, cwd, "extensions", "install", extURL, "--consent")
	if _, err := os.Stat(filepath.Join(h2, ".gemini/extensions/deploy", channel.GeminiManifestFile)); err != nil {
		t.Fatalf("under the policy, gemini did not install deploy from the channel: %v", err)
	}
}
