package api

import (
	"context"
	"errors"
	"fmt"

	"github.com/wharfhq/wharf/internal/server/policystate"
	"github.com/wharfhq/wharf/internal/server/tokens"
	"github.com/wharfhq/wharf/plugin"
)

// impactChange is one catalog plugin whose decision differs between the
// current policy and a proposed one.
type impactChange struct {
	ID            plugin.ID
	Before, After Decision
}

// impact decides every catalog plugin under the current policy and under
// proposed (every layer, in authority order, compiled by the same
// PolicyCompiler the server uses) and returns the plugins whose outcome
// changes: allowed ↔ denied, or forced on/off. checked is how many plugins
// were decided. Nothing is audited: a preview asks for no plugin. Both
// policies are the layers that apply to who: the organization's for an
// empty Identity, and the layers targeted to its groups too (the preview's
// group filter).
func (s *Server) impact(ctx context.Context, proposed []Layer, who tokens.Identity) (changes []impactChange, checked int, err error) {
	cat, err := s.catalog()
	if err != nil {
		return nil, 0, err
	}
	cur, _, curVersion, err := s.pol.DeciderFor(ctx, who)
	if err != nil {
		return nil, 0, policyError(err)
	}
	proposed = policystate.Applying(proposed, who)
	next, err := s.deps.Policy(ctx, toPolicyLayers(proposed))
	if err != nil {
		return nil, 0, fmt.Errorf("compile proposed policy: %w", err)
	}
	nextVersion := policystate.Version(proposed)
	hits, err := cat.Search(ctx, SearchQuery{})
	if err != nil {
		return nil, 0, err
	}
	for _, h := range hits {
		id := plugin.ID{Name: h.Name, Source: h.Marketplace}
		d, err := cat.Plugin(ctx, id)
		if err != nil {
			return nil, 0, err
		}
		in := decisionInput(id, d, plugin.ID{})
		before, err := peek(ctx, cur, curVersion, in)
		if err != nil {
			return nil, 0, err
		}
		after, err := peek(ctx, next, nextVersion, in)
		if err != nil {
			return nil, 0, err
		}
		checked++
		if before.Allowed != after.Allowed || before.Forced != after.Forced {
			changes = append(changes, impactChange{ID: id, Before: before, After: after})
		}
	}
	return changes, checked, nil
}

// groupFilter is the identity of a ?group= filter: a member of group g
// only (no group: the organization).
func groupFilter(g string) (tokens.Identity, error) {
	if g == "" {
		return tokens.Identity{}, nil
	}
	gs, err := tokens.ValidateGroups("group", []string{g})
	if err != nil {
		var te *tokens.TargetError
		if errors.As(err, &te) {
			return tokens.Identity{}, badField("group", "%s", te.Msg)
		}
		return tokens.Identity{}, err
	}
	return tokens.Identity{Groups: gs}, nil
}
