package api

import (
	"context"
	"fmt"

	"github.com/wharfhq/wharf/internal/server/policystate"
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
// were decided. Nothing is audited: a preview asks for no plugin.
func (s *Server) impact(ctx context.Context, proposed []Layer) (changes []impactChange, checked int, err error) {
	cat, err := s.catalog()
	if err != nil {
		return nil, 0, err
	}
	cur, curVersion, err := s.decider(ctx)
	if err != nil {
		return nil, 0, err
	}
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
