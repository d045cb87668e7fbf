package main

import (
	"fmt"
	"sort"

	"github.com/wharfhq/wharf/internal/core/policy"
)

// forceRevokedOff turns off, in an exported managed-settings.json, every
// plugin a revocation names. Claude Code's enabledPlugins cannot name a
// version, so a revoked version forces the whole plugin off; a revocation of
// a digest alone names no plugin and is reported as a warning.
func forceRevokedOff(x *policy.Export, revs policy.Revocations) {
	if len(revs) == 0 {
		return
	}
	enabled, _ := x.Settings["enabledPlugins"].(map[string]bool)
	if enabled == nil {
		enabled = map[string]bool{}
	}
	var digestOnly []string
	for _, r := range revs {
		if r.Plugin == "" {
			digestOnly = append(digestOnly, r.ID)
			continue
		}
		x.Warnings = append(x.Warnings, fmt.Sprintf("%s %s is %s; Claude Code cannot disable one version, so the plugin is forced off", r.Plugin, r.Version, policy.RevokedReason(r)))
		enabled[r.Plugin] = false
	}
	if len(enabled) > 0 {
		x.Settings["enabledPlugins"] = enabled
	}
	if len(digestOnly) > 0 {
		sort.Strings(digestOnly)
		x.Warnings = append(x.Warnings, fmt.Sprintf("revocations %v withdraw a content digest, which Claude Code settings cannot name; only wharf enforces them", digestOnly))
	}
}
