package channel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
)

// ActionRebuild is the audit action of a channel build that committed a
// new tree (written by the server, actor "wharf", with what changed).
const ActionRebuild = "channel.rebuild"

// Env is what a channel is built from besides its definition: the
// server's current marketplaces, policy (its decisions, its decision on
// sources, its version and revision), revocations and approvals.
type Env struct {
	Catalog        *marketplace.Catalog
	Decide         Decider
	Sources        source.Gate
	Revocations    policy.Revocations
	Admit          Admitter
	PolicyVersion  string
	PolicyRevision uint64
}

// Fingerprint names the inputs a build of def over env depends on: the
// definition, the policy version, the revocations and, per marketplace,
// its commit, last update and load error. Two builds with one fingerprint
// have the same tree, so Ensure skips the second.
func Fingerprint(def Definition, env Env) string {
	fp := sha256.New()
	defJSON, _ := json.Marshal(struct {
		Name, Description     string
		Marketplaces, Plugins []string
		Revision              int
	}{def.Name, def.Description, def.Marketplaces, def.Plugins, def.Revision})
	revJSON, _ := json.Marshal(env.Revocations)
	fmt.Fprintf(fp, "%s\x00%s\x00%s\x00", defJSON, env.PolicyVersion, revJSON)
	if env.Catalog != nil {
		for _, l := range env.Catalog.Marketplaces() {
			fmt.Fprintf(fp, "%s %s %s %v\x00", l.Known.Name, l.Known.Commit, l.Known.LastUpdated.UTC().Format(time.RFC3339Nano), l.Err)
		}
	}
	return hex.EncodeToString(fp.Sum(nil))
}

// Refresh brings channel name's build up to date with its stored
// definition and env: when they changed since its last build the channel
// is rebuilt and, if its tree changed, the new commit is audited
// (ActionRebuild, with the commit, its parent, the generation, the policy
// version, the plugin count and the changes against the parent). The
// changes of the last rebuild stay on the head (Head.Changes).
func (b *Builder) Refresh(ctx context.Context, name string, env func(context.Context) (Env, error), now time.Time) (Definition, Result, error) {
	var def Definition
	if err := b.Store.View(func(r store.Reader) (err error) {
		def, err = Get(r, name)
		return err
	}); err != nil {
		return def, Result{}, err
	}
	e, err := env(ctx)
	if err != nil {
		return def, Result{}, err
	}
	res, err := b.Ensure(ctx, Input{Definition: def, Catalog: e.Catalog, Decide: e.Decide, Sources: e.Sources, Revocations: e.Revocations,
		Admit: e.Admit, Vendor: b.Vendor, PolicyRevision: e.PolicyRevision}, Fingerprint(def, e))
	if err != nil {
		return def, Result{}, err
	}
	if res.Rebuilt {
		h := res.Head
		if err := b.Store.Update(func(tx store.Tx) error {
			return audit.Append(tx, audit.Entry{Time: now.UTC(), Action: ActionRebuild, Actor: "wharf", Object: "channel " + name,
				Detail: map[string]any{"commit": h.Commit, "parent": h.Parent, "generation": h.Generation, "policyVersion": e.PolicyVersion,
					"plugins": len(h.Plan.Entries), "changes": h.Changes}})
		}); err != nil {
			return def, res, err
		}
	}
	return def, res, nil
}
