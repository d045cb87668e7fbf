package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/plugin"
)

// agentExportFormats are the --format values exportAgent handles, with the
// file each agent reads its managed configuration from on Linux.
var agentExportFormats = map[string]string{
	"copilot":  policy.CopilotManagedFile,
	"codex":    policy.CodexManagedFile,
	"gemini":   policy.GeminiManagedFile,
	"opencode": policy.OpenCodeManagedFile,
}

// revocationsNotExported says, for the formats that cannot carry a
// revocation, why not and who enforces it instead (Copilot's turns the
// revoked plugin off).
var revocationsNotExported = map[string]string{
	"codex":    "Codex's requirements cannot turn a plugin off; wharf enforces them",
	"gemini":   "Gemini CLI's settings cannot disable an extension by name; wharf's channel withdraws a revoked plugin",
	"opencode": "OpenCode's managed configuration cannot stop a plugin its user lists; wharf's channel withdraws a revoked plugin",
}

// agentExport is the JSON `wharf policy export --format <agent> --json`
// prints: the document, where the agent reads it, and the warnings.
type agentExport struct {
	Format   string   `json:"format"`
	File     string   `json:"file"`
	Document string   `json:"document"`
	Warnings []string `json:"warnings"`
}

// exportAgent is `wharf policy export --format copilot|codex|gemini|opencode`:
// the effective policy as GitHub Copilot CLI's managed-settings.json (for
// /etc/github-copilot/), Codex's requirements.toml (for /etc/codex/),
// Gemini CLI's system settings.json (for /etc/gemini-cli/) or OpenCode's
// managed opencode.json (for /etc/opencode/), with what the format cannot
// carry reported as warnings. With --channel the server compiles it from
// the channel's managed settings.
func (a *app) exportAgent(ctx context.Context, o *policyOptions, format, output, channelName string) error {
	var x agentExport
	if channelName != "" {
		body, u, err := channelGet(ctx, a.h, channelName, format)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(body, &x); err != nil || x.Format != format || x.Document == "" {
			return &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeSource, Object: u, Err: fmt.Errorf("the answer is not a %s managed-settings document", format),
				Hint: "check that --policy-url names a wharf server with channels"}
		}
		x.File = agentExportFormats[format]
	} else {
		e, _, err := o.engine(a)
		if err != nil {
			return err
		}
		var doc []byte
		switch format {
		case "copilot":
			ex := e.ExportCopilot()
			forceRevokedOff(&ex, e.Revocations())
			doc, err = ex.JSON()
			x.Warnings = ex.Warnings
		case "codex":
			ex := e.ExportCodex()
			doc, err = ex.TOML()
			x.Warnings = ex.Warnings
		case "gemini":
			ex := e.ExportGemini()
			doc, err = ex.JSON()
			x.Warnings = ex.Warnings
		case "opencode":
			ex := e.ExportOpenCode()
			doc, err = ex.JSON()
			x.Warnings = ex.Warnings
		default:
			return errors.New("unknown agent format " + format)
		}
		if err != nil {
			return err
		}
		if why := revocationsNotExported[format]; why != "" && len(e.Revocations()) > 0 {
			x.Warnings = append(x.Warnings, "revocations are not exported: "+why)
		}
		x.Format, x.File, x.Document = format, agentExportFormats[format], string(doc)
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
