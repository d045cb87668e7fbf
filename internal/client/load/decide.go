package load

import (
	"context"
	"sync"

	"github.com/wharfhq/wharf/internal/core/policy"
)

// Policy is what a pass asks before it admits a plugin, a surface of
// components, a hook or a session plugin dir. *policy.Engine implements it.
// Implementations must be safe for concurrent use, and Decide must be a pure
// function of the request and Version: decisions are memoized by version.
type Policy interface {
	Decide(ctx context.Context, req policy.Request) (policy.Decision, error)
	Version() string
}

// memoFile is a Policy that keeps its decisions in a file between processes
// (*policy.Engine opened with policy.WithMemoFile).
type memoFile interface {
	MemoFile() string // "" when it keeps none
	LoadMemo()
	SaveMemo() error
}

// Decider memoizes the decisions of one Policy for its current version, in
// memory, unless the policy keeps a memo of its own: a decision is a pure function of the request and the policy
// version (which hashes every input document and module), so an entry is
// valid exactly as long as the version is the same; a new version starts an
// empty memo. A memo hit, the common case, allocates nothing. Between
// processes the policy's own memo file carries the decisions (see Begin and
// Save). A nil *Decider, or one without a policy, allows everything.
type Decider struct {
	p   Policy
	own bool // p keeps its own memo (memoFile)

	mu      sync.Mutex
	version string
	m       map[string]policy.Decision
}

// NewDecider returns a Decider over p (nil allows everything).
func NewDecider(p Policy) *Decider {
	mf, ok := p.(memoFile)
	return &Decider{p: p, own: ok && mf.MemoFile() != ""}
}

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

// Begin prepares the memo for the policy's current version and has the
// policy read its memo file, if it keeps one. It is safe to call it
// concurrently with reading settings and the registry: it is the slow part
// of a cold start that does not depend on them.
func (d *Decider) Begin() {
	if d == nil || d.p == nil {
		return
	}
	v := d.p.Version()
	if mf, ok := d.p.(memoFile); ok {
		mf.LoadMemo()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.version != v || d.m == nil {
		d.version, d.m = v, map[string]policy.Decision{}
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

// Decide returns the decision for req, from the memo when possible. An
// evaluation error is never memoized and fails closed. Requests with
// RequiredBy, DeclaredCross or Signatures (install-time questions) are not
// memoized.
func (d *Decider) Decide(ctx context.Context, req policy.Request) (policy.Decision, error) {
	if d == nil || d.p == nil {
		return policy.Decision{Allowed: true}, nil
	}
	// A policy with a memo of its own (the engine's, keyed alike) answers
	// from it without evaluating: a second map in front of it would only
	// copy every key.
	memo := !d.own && req.RequiredBy.IsZero() && len(req.DeclaredCross) == 0 && len(req.Signatures) == 0
	var buf [256]byte
	var k []byte
	if memo {
		k = policy.AppendMemoKey(buf[:0], req)
		d.mu.Lock()
		dec, ok := d.m[string(k)]
		d.mu.Unlock()
		if ok {
			return dec, nil
		}
	}
	dec, err := d.p.Decide(ctx, req)
	if err != nil {
		return dec, err
	}
	if memo {
		d.mu.Lock()
		if d.m != nil && (dec.PolicyVersion == "" || dec.PolicyVersion == d.version) {
			d.m[string(k)] = dec
		}
		d.mu.Unlock()
	}
	return dec, nil
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
