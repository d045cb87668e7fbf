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
type AgentSettings = policy.AgentExport

// channelAgentSettings is GET /v1/channels/{name}/{format}-managed-settings
// for format copilot, codex, gemini or opencode: the channel's Claude Code
// managed settings (channelSettings) with the server's revocations,
// compiled by policy's ExportAgent, as `wharf policy export --format
// <agent>` compiles a policy layer. A revoked plugin is left out of the
// channel, so its channel name is already forced off in those settings;
// ExportAgent forces off the name the revocation gives as well (Copilot
// CLI), or says the format cannot (the others).
func (s *Server) channelAgentSettings(format string) echo.HandlerFunc {
	return func(c echo.Context) error {
		def, h, err := s.requestedChannel(c)
		if err != nil {
			return err
		}
		revs, err := s.revocations(c.Request().Context())
		if err != nil {
			return fmt.Errorf("read revocations: %w", err)
		}
		out, err := agentSettings(format, channel.Settings(def.Name, s.cloneURL(c.Request(), def.Name), h.Plan.Entries, h.Plan.LeftOut), revs)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, out)
	}
}

// agentSettings compiles a channel's Claude Code managed settings, with
// the revocations in force, into format.
func agentSettings(format string, ms channel.ManagedSettings, revs policy.Revocations) (AgentSettings, error) {
	b, err := json.Marshal(ms)
	if err != nil {
		return AgentSettings{}, err
	}
	eng, err := policy.NewEngine([]policy.Layer{{Name: "channel", Settings: b}}, policy.WithRevocations(revs))
	if err != nil {
		return AgentSettings{}, err
	}
	return eng.ExportAgent(format)
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
