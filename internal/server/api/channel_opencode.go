package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/server/channel"
)

// serveOpenCodeSkills serves /git/{channel}/opencode/skills/: the skill
// index OpenCode reads from a URL its configuration lists under skills.urls
// (index.json), and each file of each entry (<plugin>/<path>), after
// serveGit let the caller in to the channel (channel.OpenCodeSkills).
// OpenCode sends no credentials with these requests, so only a public
// channel serves it.
func (s *Server) serveOpenCodeSkills(c echo.Context, name, rest string) error {
	r := c.Request()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return gitText(c, http.StatusMethodNotAllowed, "only GET", 0)
	}
	rest, ok := strings.CutPrefix(rest, "skills/")
	if !ok {
		return gitText(c, http.StatusNotFound, "no such path: OpenCode's skills are at /git/"+channel.OpenCodeSkillsPath(name), 0)
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.deps.RequestTimeout)
	defer cancel()
	if _, _, err := s.ensureChannel(ctx, name); err != nil {
		if errors.Is(err, channel.ErrNotFound) {
			return gitText(c, http.StatusNotFound, err.Error(), 0)
		}
		s.log.Error("channel build failed", "channel", name, "err", err)
		return gitText(c, http.StatusServiceUnavailable, "channel build failed: "+err.Error(), 0)
	}
	st, err := s.chans.Storer(name)
	if err != nil {
		return gitText(c, http.StatusServiceUnavailable, err.Error(), 0)
	}
	if rest == "index.json" || rest == "" {
		idx, _, err := channel.OpenCodeSkills(st)
		if err != nil {
			s.log.Error("OpenCode skill index failed", "channel", name, "err", err)
			return gitText(c, http.StatusServiceUnavailable, err.Error(), 0)
		}
		c.Response().Header().Set("Cache-Control", "no-cache")
		return c.JSON(http.StatusOK, idx)
	}
	pluginName, rel, _ := strings.Cut(rest, "/")
	b, err := channel.OpenCodeFile(st, pluginName, rel)
	if errors.Is(err, channel.ErrNoPlugin) {
		return gitText(c, http.StatusNotFound, err.Error(), 0)
	}
	if err != nil {
		return gitText(c, http.StatusServiceUnavailable, err.Error(), 0)
	}
	return c.Blob(http.StatusOK, "application/octet-stream", b)
}
