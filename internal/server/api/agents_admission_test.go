package api

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/internal/server/channel"
)

// TestAgentFormatsServeApprovedVersions holds a version (risky 10.0.0 adds
// a hook) and checks that every format a channel serves other agents keeps
// to the approved version, as the Claude Code marketplace does
// (TestApprovalHoldsAndReleases): the Copilot CLI and Codex marketplace
// lists 9.9.9 and not 10.0.0, the Gemini CLI extension repository holds
// 9.9.9's tree, and OpenCode's skill index versions the entry with 9.9.9's
// digest and serves its manifest; after an admin approves 10.0.0, each
// serves it.
func TestAgentFormatsServeApprovedVersions(t *testing.T) {
	e, f, g := newGitCatalogEnv(t)
	admin, dev := e.tokens[RoleAdmin], e.tokens[RoleDeveloper]
	v, i := e.channelEntry(t, "risky")
	if i < 0 || v.Entries[i].Version != "9.9.9" {
		t.Fatalf("risky before: %+v", v.Entries)
	}
	v1 := v.Entries[i].Digest
	riskyV2(t, f, g)
	mustStatus(t, e.do("POST", "/v1/marketplaces/corp/update", admin, nil), 200)
	if v, i = e.channelEntry(t, "risky"); v.Entries[i].Digest != v1 || v.Entries[i].Held == "" {
		t.Fatalf("risky 10.0.0 is not held: %+v", v.Entries[i])
	}

	check := func(wantVersion, wantDigest, notVersion string) {
		t.Helper()
		clone := filepath.Join(t.TempDir(), "approved")
		mustGit(t, "", "clone", "-q", e.channelURL("approved", dev), clone)
		for _, mf := range []string{channel.FlatMarketplaceFile, channel.CodexFlatMarketplaceFile} {
			b, err := os.ReadFile(filepath.Join(clone, mf))
			if err != nil || strings.Contains(string(b), `"`+notVersion+`"`) || !strings.Contains(string(b), `"`+wantVersion+`"`) {
				t.Fatalf("%s (%v) lists risky at the wrong version (want %s, not %s):\n%s", mf, err, wantVersion, notVersion, b)
			}
		}
		ext := filepath.Join(t.TempDir(), "risky")
		mustGit(t, "", "clone", "-q", strings.TrimSuffix(e.channelURL("approved", dev), ".git")+"/"+strings.TrimPrefix(channel.GeminiPath("approved", "risky"), "approved/"), ext)
		if tree, err := trust.DigestOmitting(ext, ".git", channel.GeminiManifestFile); err != nil || tree.Digest != wantDigest {
			t.Fatalf("the Gemini CLI extension of risky: %v %v, want %s", tree, err, wantDigest)
		}
		var idx channel.OpenCodeIndex
		e.do("GET", "/git/"+channel.OpenCodeSkillsPath("approved")+"index.json", dev, nil).json(t, &idx)
		found := false
		for _, en := range idx.Skills {
			if en.Name == "risky" {
				found = true
				if en.Version != (channel.OpenCodeVersion{Channel: "approved", Digest: wantDigest, Generated: true}).String() {
					t.Fatalf("OpenCode's entry of risky has version %q, want the digest %s", en.Version, wantDigest)
				}
			}
		}
		res := e.do("GET", "/git/"+channel.OpenCodeSkillsPath("approved")+"risky/.claude-plugin/plugin.json", dev, nil)
		if !found || res.status != 200 || !strings.Contains(string(res.body), `"`+wantVersion+`"`) {
			t.Fatalf("OpenCode's skill index: found %v; plugin.json %d %s", found, res.status, res.body)
		}
	}
	check("9.9.9", v1, "10.0.0")

	mustStatus(t, e.do("POST", "/v1/approvals/decisions", admin, map[string]string{"plugin": "risky@corp", "version": "10.0.0", "decision": "approve", "note": "hook reviewed"}), 200)
	v, i = e.channelEntry(t, "risky")
	if v.Entries[i].Version != "10.0.0" {
		t.Fatalf("after the approval the channel serves %+v", v.Entries[i])
	}
	check("10.0.0", v.Entries[i].Digest, "9.9.9")
}
