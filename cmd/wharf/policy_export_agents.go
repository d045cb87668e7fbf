package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/plugin"
)

// exportAgent is `wharf policy export --format copilot|codex|gemini|opencode`:
// the effective policy as GitHub Copilot CLI's managed-settings.json (for
// /etc/github-copilot/), Codex's requirements.toml (for /etc/codex/),
// Gemini CLI's system settings.json (for /etc/gemini-cli/) or OpenCode's
// managed opencode.json (for /etc/opencode/), with what the format cannot
// carry reported as warnings. With --channel the server compiles it from
// the channel's managed settings.
func (a *app) exportAgent(ctx context.Context, o *policyOptions, format, output, channelName string) error {
	var x policy.AgentExport
	if channelName != "" {
		body, u, err := channelGet(ctx, a.h, channelName, format)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(body, &x); err != nil || x.Format != format || x.Document == "" {
			return &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeSource, Object: u, Err: fmt.Errorf("the answer is not a %s managed-settings document", format),
				Hint: "check that --policy-url names a wharf server with channels"}
		}
		x.File = policy.AgentManagedFiles[format]
	} else {
		e, _, err := o.engine(a)
		if err != nil {
			return err
		}
		if x, err = e.ExportAgent(format); err != nil {
			return err
		}
	}
	if x.Warnings == nil {
		x.Warnings = []string{}
	}
	for _, w := range x.Warnings {
		a.warnf("export: %s", w)
	}
	if output != "" {
		if err := atomicfile.WriteFile(output, []byte(x.Document), 0o644); err != nil {
			return &plugin.Error{Layer: plugin.LayerMaterialization, Type: "write-failed", Object: output, Err: err, Hint: "check that the directory is writable"}
		}
	}
	if a.cfg.JSON {
		return a.printJSON(x)
	}
	if output == "" {
		_, err := a.stdout.Write([]byte(x.Document))
		return err
	}
	a.printf("wrote %s (install it as %s)\n", output, x.File)
	return nil
}
