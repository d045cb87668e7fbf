package load

import (
	"context"

	"github.com/wharfhq/wharf/internal/core/policy"
)

// Policy is what a pass asks before it admits a plugin, a surface of
// components, a hook or a session plugin dir. *policy.Engine implements it.
// Implementations must be safe for concurrent use, and Decide must be a pure
// function of the request and Version (*policy.Engine memoizes by version).
type Policy interface {
	Decide(ctx context.Context, req policy.Request) (policy.Decision, error)
	Version() string
}

// memoFile is a Policy that keeps its decisions in a file between processes
// (*policy.Engine opened with policy.WithMemoFile).
type memoFile interface {
	LoadMemo()
	SaveMemo() error
}

// Decider is how a pass asks its Policy. It keeps no decisions of its own:
// the policy's one memo (*policy.Engine memoizes every decision per
// version, in memory and, with policy.WithMemoFile, in a file between
// processes) answers repeated requests. Begin and Save have that memo file
// read early and written after a pass. A nil *Decider, or one without a
// policy, allows everything.
type Decider struct {
	p Policy
}

// NewDecider returns a Decider over p (nil allows everything).
func NewDecider(p Policy) *Decider { return &Decider{p: p} }

// Policy is the policy the Decider asks (nil for none).
func (d *Decider) Policy() Policy {
	if d == nil {
		return nil
	}
	return d.p
}

// Version is the policy version in force ("" without policy).
func (d *Decider) Version() string {
	if d == nil || d.p == nil {
		return ""
	}
	return d.p.Version()
}

// Begin has the policy read its memo file, if it keeps one. It is safe to
// call it concurrently with reading settings and the registry: it is the
// slow part of a cold start that does not depend on them.
func (d *Decider) Begin() {
	if d == nil || d.p == nil {
		return
	}
	if mf, ok := d.p.(memoFile); ok {
		mf.LoadMemo()
	}
}

// Save has the policy write its memo file, if it keeps one and gained
// decisions. A failure only costs the next process the evaluations again;
// callers report it as a warning.
func (d *Decider) Save() error {
	if d == nil || d.p == nil {
		return nil
	}
	if mf, ok := d.p.(memoFile); ok {
		return mf.SaveMemo()
	}
	return nil
}

// Decide returns the policy's decision for req. An evaluation error fails
// closed.
func (d *Decider) Decide(ctx context.Context, req policy.Request) (policy.Decision, error) {
	if d == nil || d.p == nil {
		return policy.Decision{Allowed: true}, nil
	}
	return d.p.Decide(ctx, req)
}

// Check is Decide in error form: nil when allowed, else the *plugin.Error
// (policy layer) of the denial or of the failed evaluation.
func (d *Decider) Check(ctx context.Context, req policy.Request) error {
	dec, err := d.Decide(ctx, req)
	if err != nil {
		return err
	}
	return dec.Err(req)
}
