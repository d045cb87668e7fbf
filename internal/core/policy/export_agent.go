package policy

import (
	"fmt"
	"sort"
)

// AgentManagedFiles are the agents ExportAgent compiles for, each with the
// file the agent reads its managed configuration from on Linux.
var AgentManagedFiles = map[string]string{
	"copilot":  CopilotManagedFile,
	"codex":    CodexManagedFile,
	"gemini":   GeminiManagedFile,
	"opencode": OpenCodeManagedFile,
}

// revocationsNotExported says, for the agents whose managed format cannot
// turn a plugin off, why not and who enforces a revocation instead.
var revocationsNotExported = map[string]string{
	"codex":    "Codex's requirements cannot turn a plugin off; wharf enforces them",
	"gemini":   "Gemini CLI's settings cannot disable an extension by name; wharf's channel withdraws a revoked plugin",
	"opencode": "OpenCode's managed configuration cannot stop a plugin its user lists; wharf's channel withdraws a revoked plugin",
}

// AgentExport is the effective policy as one agent's managed configuration:
// the document to install at File, and what the agent's format cannot
// carry.
type AgentExport struct {
	Format   string   `json:"format"`
	File     string   `json:"file"`
	Document string   `json:"document"`
	Warnings []string `json:"warnings"`
}

// UnknownAgentError is ExportAgent's error for a format no agent export
// has.
type UnknownAgentError struct{ Format string }

func (e *UnknownAgentError) Error() string {
	names := make([]string, 0, len(AgentManagedFiles))
	for n := range AgentManagedFiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return fmt.Sprintf("unknown agent format %q (one of %v)", e.Format, names)
}

// ExportAgent compiles the engine's policy and revocations into format's
// managed configuration: GitHub Copilot CLI's managed-settings.json
// (ExportCopilot, every revoked plugin forced off as for Claude Code),
// Codex's requirements.toml (ExportCodex), Gemini CLI's system
// settings.json (ExportGemini) or OpenCode's managed opencode.json
// (ExportOpenCode); the last three cannot turn a plugin off and say so
// in a warning when a revocation is in force. It is the one place an
// agent's format is chosen: `wharf policy export --format <agent>` and
// the server's per-channel settings both call it.
func (e *Engine) ExportAgent(format string) (AgentExport, error) {
	file, ok := AgentManagedFiles[format]
	if !ok {
		return AgentExport{}, &UnknownAgentError{Format: format}
	}
	var (
		doc   []byte
		warns []string
		err   error
	)
	switch format {
	case "copilot":
		x := e.ExportCopilot()
		ForceRevokedOff(&x, e.Revocations(), "Copilot CLI")
		doc, err = x.JSON()
		warns = x.Warnings
	case "codex":
		x := e.ExportCodex()
		doc, err = x.TOML()
		warns = x.Warnings
	case "gemini":
		x := e.ExportGemini()
		doc, err = x.JSON()
		warns = x.Warnings
	case "opencode":
		x := e.ExportOpenCode()
		doc, err = x.JSON()
		warns = x.Warnings
	}
	if err != nil {
		return AgentExport{}, err
	}
	if why := revocationsNotExported[format]; why != "" && len(e.Revocations()) > 0 {
		warns = append(warns, "revocations are not exported: "+why)
	}
	if warns == nil {
		warns = []string{}
	}
	return AgentExport{Format: format, File: file, Document: string(doc), Warnings: warns}, nil
}

// ForceRevokedOff turns off, in an exported managed-settings.json (Claude
// Code's, or Copilot CLI's, which reads the same key), every plugin a
// revocation names. enabledPlugins cannot name a version, so a revoked
// version forces the whole plugin off; a revocation of a digest alone
// names no plugin and is reported as a warning. agent names the reader in
// the warnings.
func ForceRevokedOff(x *Export, revs Revocations, agent string) {
	if len(revs) == 0 {
		return
	}
	if x.Settings == nil {
		x.Settings = map[string]any{}
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
		x.Warnings = append(x.Warnings, fmt.Sprintf("%s %s is %s; %s cannot disable one version, so the plugin is forced off", r.Plugin, r.Version, RevokedReason(r), agent))
		enabled[r.Plugin] = false
	}
	if len(enabled) > 0 {
		x.Settings["enabledPlugins"] = enabled
	}
	if len(digestOnly) > 0 {
		sort.Strings(digestOnly)
		x.Warnings = append(x.Warnings, fmt.Sprintf("revocations %v withdraw a content digest, which %s settings cannot name; only wharf enforces them", digestOnly, agent))
	}
}
