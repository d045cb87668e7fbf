package main

import (
	"errors"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/plugin"
)

// exportAgent is `wharf policy export --format copilot|codex`: the
// effective policy as GitHub Copilot CLI's managed-settings.json (for
// /etc/github-copilot/) or Codex's requirements.toml (for /etc/codex/),
// with what the format cannot carry reported as warnings.
func (a *app) exportAgent(o *policyOptions, format, output, channelName string) error {
	if channelName != "" {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--channel", Err: errors.New("the server serves a channel's managed settings for Claude Code only"),
			Hint: "export --format " + format + " from the layers (without --channel), or use --format claude --channel"}
	}
	e, _, err := o.engine(a)
	if err != nil {
		return err
	}
	var doc []byte
	var warns []string
	var result any
	if format == "copilot" {
		x := e.ExportCopilot()
		forceRevokedOff(&x, e.Revocations())
		doc, err = x.JSON()
		warns, result = x.Warnings, x
	} else {
		x := e.ExportCodex()
		if len(e.Revocations()) > 0 {
			x.Warnings = append(x.Warnings, "revocations are not exported: Codex's requirements cannot turn a plugin off; wharf enforces them")
		}
		doc, err = x.TOML()
		warns, result = x.Warnings, x
	}
	if err != nil {
		return err
	}
	for _, w := range warns {
		a.warnf("export: %s", w)
	}
	if output != "" {
		if err := atomicfile.WriteFile(output, doc, 0o644); err != nil {
			return &plugin.Error{Layer: plugin.LayerMaterialization, Type: "write-failed", Object: output, Err: err, Hint: "check that the directory is writable"}
		}
	}
	if a.cfg.JSON {
		return a.printJSON(result)
	}
	if output == "" {
		_, err = a.stdout.Write(doc)
		return err
	}
	a.printf("wrote %s (install it as %s)\n", output, map[string]string{"copilot": policy.CopilotManagedFile, "codex": policy.CodexManagedFile}[format])
	return nil
}
