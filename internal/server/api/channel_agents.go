package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-git/go-git/v5/storage"
	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/server/channel"
	"github.com/wharfhq/wharf/internal/server/gitserver"
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
		def, h, err := s.requestedChannel(c)
		if err != nil {
			return err
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

// serveGeminiExtension serves /git/{channel}/gemini/{plugin}.git: the
// channel's plugin as a Gemini CLI extension repository
// (channel.GeminiExtension), after serveGit let the caller in to the
// channel.
func (s *Server) serveGeminiExtension(w http.ResponseWriter, r *http.Request, name string) {
	gs := &gitserver.Server{
		Timeout:         s.deps.RequestTimeout,
		MaxRequestBytes: s.deps.BodyLimit,
		Open: func(ctx context.Context, repo string) (storage.Storer, error) {
			ctx, cancel := context.WithTimeout(ctx, s.deps.RequestTimeout)
			defer cancel()
			if _, _, err := s.ensureChannel(ctx, name); err != nil {
				if errors.Is(err, channel.ErrNotFound) {
					return nil, fmt.Errorf("%w: %v", gitserver.ErrNotFound, err)
				}
				s.log.Error("channel build failed", "channel", name, "err", err)
				return nil, err
			}
			st, err := s.chans.Storer(name)
			if err != nil {
				return nil, err
			}
			ext, err := channel.GeminiExtension(st, strings.TrimSuffix(repo, ".git"))
			if errors.Is(err, channel.ErrNoPlugin) {
				return nil, fmt.Errorf("%w: %v", gitserver.ErrNotFound, err)
			}
			return ext, err
		},
	}
	http.StripPrefix("/git/"+name+"/gemini", gs).ServeHTTP(w, r)
}
