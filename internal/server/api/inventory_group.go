package api

import (
	"context"
	"errors"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/fleet"
	"github.com/wharfhq/wharf/internal/server/tokens"
)

// The fleet pages' ?group= filter: the machines whose reporting token is
// in the group (tokens.Identity.Groups). A machine is bound to the token
// that first reported it (fleet.MachineInfo.Token).

// groupMembers answers whether machines belong to group, reading each
// machine's token once per request.
type groupMembers struct {
	s     *Server
	group string
	seen  map[string]bool // machine → in the group
	toks  map[string]bool // token id → in the group
}

func (s *Server) groupMembers(group string) *groupMembers {
	return &groupMembers{s: s, group: group, seen: map[string]bool{}, toks: map[string]bool{}}
}

// has reports whether machine's token is in the group; a machine or token
// since deleted is not.
func (g *groupMembers) has(machine string) (bool, error) {
	if in, ok := g.seen[machine]; ok {
		return in, nil
	}
	mi, err := g.s.inv.Machine(machine)
	var nf *fleet.NotFoundError
	if errors.As(err, &nf) {
		g.seen[machine] = false
		return false, nil
	}
	if err != nil {
		return false, err
	}
	in, ok := g.toks[mi.Token]
	if !ok {
		err := g.s.deps.Store.View(func(r store.Reader) error {
			rec, err := tokens.Get(r, mi.Token)
			var tnf *tokens.NotFoundError
			if errors.As(err, &tnf) {
				return nil
			}
			if err != nil {
				return err
			}
			in = rec.HasGroup(g.group)
			return nil
		})
		if err != nil {
			return false, err
		}
		g.toks[mi.Token] = in
	}
	g.seen[machine] = in
	return in, nil
}

// groupParam reads ?group= of the fleet pages ("" when absent).
func groupParam(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	who, err := groupFilter(raw)
	if err != nil {
		return "", err
	}
	return who.Groups[0], nil
}

// holderBatch is how many holders a group count reads at once.
const holderBatch = 1000

// groupCounts counts what the group's machines have of plugin id, walking
// every holder of it (an admin's query; the fleet's own counts are kept
// as reports arrive, per group they are not).
func (s *Server) groupCounts(ctx context.Context, g *groupMembers, c fleet.Counts) (fleet.Counts, error) {
	out := fleet.Counts{Plugin: c.Plugin, Versions: map[string]int{}, Digests: map[string]int{}, States: map[string]int{}, Installs: map[string]int{}}
	after := ""
	for {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		hs, next, err := s.inv.Holders(c.Plugin, after, holderBatch)
		if err != nil {
			return out, err
		}
		for _, h := range hs {
			in, err := g.has(h.Machine)
			if err != nil {
				return out, err
			}
			if !in || len(h.Installs) == 0 {
				continue
			}
			out.Machines++
			for _, i := range h.Installs {
				out.Versions[i.Version]++
				out.Digests[i.Digest]++
				out.States[i.State]++
				out.Installs[i.Install]++
			}
		}
		if next == "" {
			return out, nil
		}
		after = next
	}
}
