package channel

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/policy"
)

// A plugin whose vendored tree does what managed policy denies (risky
// ships an executable) is left out of the channel as denied, with the
// reason naming the capability; the others are carried.
func TestChannelLeavesOutDeniedCapabilities(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	w := newWorld(t)
	e, err := policy.NewEngine([]policy.Layer{{Name: "managed", Settings: []byte(`{"deniedCapabilities": [{"kind": "executable"}]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b := NewBuilder(t.TempDir(), w.st, nil)
	in := w.input(b.Vendor, DefaultApproved(), nil)
	in.Decide = func(ctx context.Context, c Candidate) (Verdict, error) {
		d, err := e.Decide(ctx, policy.Request{Action: policy.ActionInstall, Plugin: c.ID, Marketplace: policy.Marketplace{Name: c.ID.Source}, Content: c.Content})
		if err != nil {
			return Verdict{}, err
		}
		v := Verdict{Allowed: d.Allowed, Forced: d.Forced}
		for _, r := range d.Reasons {
			v.Reasons = append(v.Reasons, Reason{Layer: r.Layer, Rule: r.Rule, Message: r.Message})
		}
		return v, nil
	}
	res, err := b.Ensure(ctx, in, "fp1")
	if err != nil {
		t.Fatal(err)
	}
	var risky *LeftOut
	for i, l := range res.Head.Plan.LeftOut {
		if l.Plugin == "risky@corp" {
			risky = &res.Head.Plan.LeftOut[i]
		}
	}
	if risky == nil || risky.Kind != LeftDenied || !strings.Contains(risky.Reason, "ships executable run.sh (exec-bit), which deniedCapabilities[0] denies (policy layer managed, rule deniedCapabilities)") {
		t.Fatalf("risky@corp left out as %+v; want denied by deniedCapabilities", risky)
	}
	for _, e := range res.Head.Plan.Entries {
		if e.Origin == "risky@corp" {
			t.Fatal("the channel carries risky@corp")
		}
	}
	if len(res.Head.Plan.Entries) != 3 {
		t.Fatalf("entries %+v; want deploy and both lints", res.Head.Plan.Entries)
	}
}
