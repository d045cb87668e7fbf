package api

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/channel"
	"github.com/wharfhq/wharf/internal/server/tokens"
)

// seesChannel reports whether p may list, read and clone def: admins see
// every channel; others a channel without a target, or one targeted to
// one of their groups or labels.
func seesChannel(p principal, def channel.Definition) bool {
	if def.Target.Empty() || p.Role == RoleAdmin {
		return true
	}
	t := tokens.Target{Groups: def.Target.Groups, Labels: def.Target.Labels}
	return t.Matches(p.Who)
}

// visibleChannels keeps the definitions the caller of c sees.
func (s *Server) visibleChannels(c echo.Context, defs []channel.Definition) []channel.Definition {
	p := s.caller(c)
	out := defs[:0:0]
	for _, d := range defs {
		if seesChannel(p, d) {
			out = append(out, d)
		}
	}
	return out
}

// hiddenChannel is the answer about a channel the caller does not see: the
// same as for a channel nobody defined, so its name is not confirmed.
func hiddenChannel(name string) error {
	return apiErr(http.StatusNotFound, CodeNotFound, "name", "%v: %q", channel.ErrNotFound, name)
}

// forChannel runs h only when the caller sees the channel of the route's
// :name (a channel targeted to other groups answers 404, as an unknown
// one does).
func (s *Server) forChannel(h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		name, err := channelParam(c)
		if err != nil {
			return err
		}
		var def channel.Definition
		err = s.deps.Store.View(func(r store.Reader) (err error) {
			def, err = channel.Get(r, name)
			return err
		})
		if errors.Is(err, channel.ErrNotFound) {
			return h(c) // the handler's own answer (the approved channel exists before it is stored)
		}
		if err != nil {
			return err
		}
		if !seesChannel(s.caller(c), def) {
			return hiddenChannel(name)
		}
		return h(c)
	}
}

// channelTarget is the target of a channel request, checked as the
// policy layers' are (tokens.Target), as the channel keeps it.
func channelTarget(t *tokens.Target) (*channel.Target, error) {
	if t == nil {
		return nil, nil
	}
	if err := t.Validate("target"); err != nil {
		return nil, targetErr(err)
	}
	if t.Empty() {
		return nil, nil
	}
	return &channel.Target{Groups: t.Groups, Labels: t.Labels}, nil
}
