package api

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/server/channel"
)

// AgentSettings is a channel's managed configuration for one agent other
// than Claude Code: the file to install (Document, at File) and what the
// agent's format cannot carry of the channel's Claude Code settings.
type AgentSettings struct {
	Format   string   `json:"format"`
	File     string   `json:"file"`
	Document string   `json:"document"`
	Warnings []string `json:"warnings"`
}

// agentFormats are the agents a channel's managed settings are served
// for besides Claude Code, each with the file the agent reads on Linux.
var agentFormats = map[string]string{
	"copilot":  policy.CopilotManagedFile,
	"codex":    policy.CodexManagedFile,
	"gemini":   policy.GeminiManagedFile,
	"opencode": policy.OpenCodeManagedFile,
}

// channelAgentSettings is GET /v1/channels/{name}/{format}-managed-settings
// for format copilot, codex, gemini or opencode: the channel's Claude Code
// managed settings (channelSettings) compiled into the agent's format the
// way `wharf policy export --format <agent>` compiles a policy layer.
func (s *Server) channelAgentSettings(format string) echo.HandlerFunc {
	return func(c echo.Context) error {
		name, err := channelParam(c)
		if err != nil {
			return err
		}
		def, h, err := s.ensureChannel(c.Request().Context(), name)
		if err != nil {
			return s.channelErr(err)
		}
		out, err := agentSettings(format, channel.Settings(def.Name, s.cloneURL(c.Request(), def.Name), h.Plan.Entries, h.Plan.LeftOut))
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, out)
	}
}

// agentSettings compiles a channel's Claude Code managed settings into
// format.
func agentSettings(format string, ms channel.ManagedSettings) (AgentSettings, error) {
	b, err := json.Marshal(ms)
	if err != nil {
		return AgentSettings{}, err
	}
	eng, err := policy.NewEngine([]policy.Layer{{Name: "channel", Settings: b}})
	if err != nil {
		return AgentSettings{}, err
	}
	out := AgentSettings{Format: format, File: agentFormats[format]}
	var doc []byte
	switch format {
	case "copilot":
		x := eng.ExportCopilot()
		doc, err = x.JSON()
		out.Warnings = x.Warnings
	case "codex":
		x := eng.ExportCodex()
		doc, err = x.TOML()
		out.Warnings = x.Warnings
	case "gemini":
		x := eng.ExportGemini()
		doc, err = x.JSON()
		out.Warnings = x.Warnings
	case "opencode":
		x := eng.ExportOpenCode()
		doc, err = x.JSON()
		out.Warnings = x.Warnings
	}
	out.Document = string(doc)
	return out, err
}
