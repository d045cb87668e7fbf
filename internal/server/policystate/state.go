package policystate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/revocations"
	"github.com/wharfhq/wharf/internal/server/tokens"
)

// Options configure a State. D is what the policy compiles to (the
// server's decision engine).
type Options[D any] struct {
	// Compile builds the engine of the layers, in authority order. It is
	// called once per policy version (and on every write, to refuse a
	// layer set that does not compile); nil: writes are not checked and
	// Decider answers ErrNoCompiler.
	Compile func(ctx context.Context, layers []Layer) (D, error)
	// TTL is how long the head read from the store may be served from
	// memory, unless Fresh says otherwise (<= 0: the head is read every
	// time).
	TTL time.Duration
	// Fresh decides whether a cached head that expires at exp may be used
	// at now: the server's rule across replicas (while every store watch
	// has proven itself current, entries do not expire). Nil: until exp.
	Fresh func(exp, now time.Time) bool
	// Now is the clock of the changes' times; default time.Now.
	Now func() time.Time
	// Logger gets the warnings (a bundle the store could not share).
	Logger *slog.Logger
}

// State is one server's view of the policy state in a store, with its
// caches: the head, the compiled policy (keyed by the head's version) and
// the signed bundle (keyed by the head's version and revision). Replicas
// over one store keep their caches current by passing the store's watch
// events of SettingsBucket to Apply. Safe for concurrent use.
//
// A read that races an invalidation must not put the old head back: every
// invalidation bumps a generation under the head's lock, and a head read
// from the store is cached only if the generation did not move while it
// was read.
type State[D any] struct {
	st  store.Store
	opt Options[D]

	signer *signer

	headMu   sync.Mutex // held by writers of headVal, headExp
	headGen  atomic.Uint64
	headVal  Head
	headExp  time.Time
	headSnap atomic.Pointer[headEntry] // what readers see: headVal, headExp as last written

	polMu    sync.Mutex
	polCache map[string]D // compiled policies, keyed by the applied version (AppliedVersion)
	polHead  string       // the head version polCache was built under

	tgtMu    sync.Mutex
	tgtCache *targetsAt // the layers' targets at one head version

	bunMu     sync.Mutex
	bunCache  map[string]*Bundle // bundles of one revision, keyed by their applied version
	bunBuilds atomic.Int64
}

// targetsAt is the layers (without their documents) of one head version:
// enough to tell which apply to a token.
type targetsAt struct {
	version string
	layers  []Layer
}

// maxCached bounds the compiled policies and bundles kept in memory: one
// per set of layers that applies to the tokens seen since the policy last
// changed.
const maxCached = 64

// headEntry is the cached head as readers see it.
type headEntry struct {
	head Head
	exp  time.Time // zero: no head cached
}

// New is the policy state of st. It creates the bundle signing key in the
// store on first use; replicas starting together agree on one.
func New[D any](st store.Store, opt Options[D]) (*State[D], error) {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Fresh == nil {
		opt.Fresh = func(exp, now time.Time) bool { return !exp.IsZero() && now.Before(exp) }
	}
	sg, err := loadOrCreateSigner(st)
	if err != nil {
		return nil, err
	}
	return &State[D]{st: st, opt: opt, signer: sg}, nil
}

// ErrNoCompiler: the state has no Compile; there is no engine to decide.
var ErrNoCompiler = errors.New("this server has no policy engine configured")

// CompileError is a layer set the engine does not compile: the write that
// would have produced it changed nothing.
type CompileError struct{ Err error }

func (e *CompileError) Error() string {
	return "the policy does not compile with this layer: " + e.Err.Error()
}

func (e *CompileError) Unwrap() error { return e.Err }

// NotFoundError is a layer that does not exist.
type NotFoundError struct{ Name string }

func (e *NotFoundError) Error() string { return fmt.Sprintf("no policy layer %q", e.Name) }

// TooManyLayersError is a layer added to a set of MaxLayers.
type TooManyLayersError struct{ Max int }

func (e *TooManyLayersError) Error() string {
	return fmt.Sprintf("there are already %d layers, the limit", e.Max)
}

// Current returns the stored head and layers, read together.
func (s *State[D]) Current() (Head, []Layer, error) {
	var h Head
	var ls []Layer
	err := s.st.View(func(r store.Reader) (err error) {
		if h, err = ReadHead(r); err != nil {
			return err
		}
		ls, err = ReadLayers(r)
		return err
	})
	return h, ls, err
}

// Layers returns the stored layers in authority order.
func (s *State[D]) Layers() ([]Layer, error) {
	var ls []Layer
	err := s.st.View(func(r store.Reader) (err error) { ls, err = ReadLayers(r); return err })
	return ls, err
}

// Layer returns the stored layer name, or nil when there is none.
func (s *State[D]) Layer(name string) (*Layer, error) {
	var l *Layer
	err := s.st.View(func(r store.Reader) (err error) { l, err = ReadLayer(r, name); return err })
	return l, err
}

// History is History over this state's store.
func (s *State[D]) History(layer string, after uint64, limit int) ([]HistoryEntry, string, error) {
	return History(s.st, layer, after, limit)
}

// Head returns the policy head at now: from memory while Fresh says the
// cached one may be used, else from the store (and caches it for TTL).
func (s *State[D]) Head(now time.Time) (Head, error) {
	if e := s.headSnap.Load(); e != nil && s.opt.Fresh(e.exp, now) {
		return e.head, nil
	}
	return s.readHead(now)
}

// readHead reads the head from the store and caches it.
func (s *State[D]) readHead(now time.Time) (Head, error) {
	var h Head
	gen := s.headGen.Load() // a head seen by the watch while reading wins
	if err := s.st.View(func(r store.Reader) (err error) { h, err = ReadHead(r); return }); err != nil {
		return Head{}, err
	}
	if s.opt.TTL > 0 {
		s.headMu.Lock()
		if s.headGen.Load() == gen {
			s.headVal, s.headExp = h, now.Add(s.opt.TTL)
			s.publishHead()
		}
		s.headMu.Unlock()
	}
	return h, nil
}

// publishHead makes headVal and headExp what readers see; s.headMu is held.
func (s *State[D]) publishHead() {
	s.headSnap.Store(&headEntry{head: s.headVal, exp: s.headExp})
}

// SetHead records a head this server just committed (a layer written here,
// or a revocation).
func (s *State[D]) SetHead(h Head) {
	s.headMu.Lock()
	defer s.headMu.Unlock()
	defer s.publishHead()
	s.headGen.Add(1)
	if h.Revision < s.headVal.Revision { // the watch may have delivered a later head: read the store
		s.headExp = time.Time{}
		return
	}
	s.headVal, s.headExp = h, time.Now().Add(s.opt.TTL)
	if s.opt.TTL <= 0 {
		s.headExp = time.Time{}
	}
}

// Apply takes one committed change from the store's watch: a change of the
// head replaces the cached head with the committed one (events come in
// commit order: the last one is the current head), so the compiled policy
// and the bundle follow it. It reports whether the event was of
// SettingsBucket.
func (s *State[D]) Apply(ev store.Event) bool {
	if ev.Bucket != SettingsBucket {
		return false
	}
	if ev.Key != HeadKey {
		return true
	}
	var h Head
	if ev.Deleted || json.Unmarshal(ev.Value, &h) != nil {
		s.DropHead()
		return true
	}
	s.headMu.Lock()
	s.headGen.Add(1)
	s.headVal, s.headExp = h, time.Time{}
	if s.opt.TTL > 0 {
		s.headExp = time.Now().Add(s.opt.TTL)
	}
	s.publishHead()
	s.headMu.Unlock()
	return true
}

// DropHead forgets the cached head: the next read goes to the store (a
// watch lost, whose missed changes are unknown).
func (s *State[D]) DropHead() {
	s.headMu.Lock()
	s.headGen.Add(1)
	s.headExp = time.Time{}
	s.publishHead()
	s.headMu.Unlock()
}

// Decider returns the engine of the organization's policy (the layers
// that apply to every token: DeciderFor an empty Identity).
func (s *State[D]) Decider(ctx context.Context) (D, Head, error) {
	d, head, _, err := s.DeciderFor(ctx, tokens.Identity{})
	return d, head, err
}

// DeciderFor returns the engine of the policy that applies to id (Head at
// the time of the call; Applying), compiling it once per applied version,
// with the head it compiled (its revision orders policies in time; the
// version only tells them apart) and the applied version.
func (s *State[D]) DeciderFor(ctx context.Context, id tokens.Identity) (D, Head, string, error) {
	var zero D
	if s.opt.Compile == nil {
		return zero, Head{}, "", ErrNoCompiler
	}
	head, err := s.Head(time.Now())
	if err != nil {
		return zero, Head{}, "", err
	}
	applied, err := s.AppliedVersion(head, id)
	if err != nil {
		return zero, Head{}, "", err
	}
	s.polMu.Lock()
	defer s.polMu.Unlock()
	if d, ok := s.polCache[applied]; ok && s.polHead == head.Version {
		return d, head, applied, nil
	}
	head, layers, err := s.Current()
	if err != nil {
		return zero, Head{}, "", err
	}
	mine := Applying(layers, id)
	applied = AppliedVersion(head.Version, layers, mine)
	d, err := s.opt.Compile(ctx, mine)
	if err != nil {
		return zero, Head{}, "", fmt.Errorf("compile policy %s: %w", applied, err)
	}
	if s.polHead != head.Version || len(s.polCache) >= maxCached {
		s.polCache, s.polHead = map[string]D{}, head.Version
	}
	s.polCache[applied] = d
	return d, head, applied, nil
}

// AppliedVersion is the version of the policy that applies to id under
// head (AppliedVersion of the layers at head's version, read once per head
// version).
func (s *State[D]) AppliedVersion(head Head, id tokens.Identity) (string, error) {
	s.tgtMu.Lock()
	t := s.tgtCache
	s.tgtMu.Unlock()
	if t == nil || t.version != head.Version {
		// Read from the store: when it moved on past the caller's head,
		// the answer is for the store's head (callers compare versions,
		// they never parse them).
		h, layers, err := s.Current()
		if err != nil {
			return "", err
		}
		slim := make([]Layer, len(layers))
		for i, l := range layers {
			slim[i] = Layer{Name: l.Name, Rank: l.Rank, Target: l.Target}
		}
		t = &targetsAt{version: h.Version, layers: slim}
		s.tgtMu.Lock()
		s.tgtCache = t
		s.tgtMu.Unlock()
	}
	return AppliedVersion(t.version, t.layers, Applying(t.layers, id)), nil
}

// Check compiles layers (a proposed layer set) and returns the engine's
// warnings on them; a set that does not compile is *CompileError. Without
// Compile every set passes.
func (s *State[D]) Check(ctx context.Context, layers []Layer) ([]string, error) {
	warnings := []string{}
	if s.opt.Compile == nil {
		return warnings, nil
	}
	d, err := s.opt.Compile(ctx, layers)
	if err != nil {
		return nil, &CompileError{Err: err}
	}
	if w, ok := any(d).(interface{ Warnings() []string }); ok {
		warnings = append(warnings, w.Warnings()...)
	}
	return warnings, nil
}

// Change is a write of one layer: its settings (a canonical JSON object)
// and modules, its rank when it changes (nil: the current one, or
// DefaultLayerRank for a new layer) and its target when it changes (nil:
// the current one, or the organization for a new layer; an empty target:
// the organization).
type Change struct {
	Name     string
	Rank     *int
	Target   *tokens.Target
	Settings json.RawMessage
	Modules  map[string]string
}

// Result is what a write committed.
type Result struct {
	Layer    *Layer // nil after a deletion
	Head     Head
	Warnings []string // the engine's, on the new layer set
}

// Put writes a layer: check (the caller's precondition) is given the
// layer's current version (0: absent) and refuses the write by returning
// an error, which Put returns. The new layer set must compile
// (*CompileError); a new layer beyond MaxLayers is *TooManyLayersError.
// The layer, the new head, a history entry and an audit entry commit
// together or not at all.
func (s *State[D]) Put(ctx context.Context, c Change, check func(current uint64) error, by Actor) (Result, error) {
	var res Result
	var compiledVersion string
	var compiledWarnings []string
	err := s.st.Update(func(tx store.Tx) error {
		layers, err := ReadLayers(tx)
		if err != nil {
			return err
		}
		var current uint64
		for _, l := range layers {
			if l.Name == c.Name {
				current = l.Version
			}
		}
		if err := check(current); err != nil {
			return err
		}
		if current == 0 && len(layers) >= MaxLayers {
			return &TooManyLayersError{Max: MaxLayers}
		}
		layers = Proposed(layers, c)
		var nl Layer
		for i := range layers {
			if layers[i].Name == c.Name {
				layers[i].Version, layers[i].UpdatedAt, layers[i].UpdatedBy = current+1, s.opt.Now().UTC(), by.ID
				nl = layers[i]
			}
		}
		action := ActionCreate
		if current != 0 {
			action = ActionUpdate
		}
		// A shared store runs fn again when a concurrent commit (often an
		// unrelated audit entry) touched what it read: compile each
		// candidate layer set once, not once per attempt.
		if v := Version(layers); v != compiledVersion {
			if compiledWarnings, err = s.Check(ctx, layers); err != nil {
				return err
			}
			compiledVersion = v
		}
		head, err := s.commit(tx, layers, c.Name, &nl, action, by)
		if err != nil {
			return err
		}
		res = Result{Layer: &nl, Head: head, Warnings: compiledWarnings}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	s.SetHead(res.Head)
	return res, nil
}

// Delete deletes a layer: absent is *NotFoundError; then check (the
// caller's precondition) is given its current version. The layer set
// left must compile (*CompileError). The deletion, the new head, a
// history entry and an audit entry commit together or not at all.
func (s *State[D]) Delete(ctx context.Context, name string, check func(current uint64) error, by Actor) (Result, error) {
	var res Result
	err := s.st.Update(func(tx store.Tx) error {
		layers, err := ReadLayers(tx)
		if err != nil {
			return err
		}
		kept := layers[:0:0]
		var current uint64
		for _, l := range layers {
			if l.Name == name {
				current = l.Version
				continue
			}
			kept = append(kept, l)
		}
		if current == 0 {
			return &NotFoundError{Name: name}
		}
		if err := check(current); err != nil {
			return err
		}
		warnings, err := s.Check(ctx, kept)
		if err != nil {
			return err
		}
		head, err := s.commit(tx, kept, name, nil, ActionDelete, by)
		if err != nil {
			return err
		}
		res = Result{Head: head, Warnings: warnings}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	s.SetHead(res.Head)
	return res, nil
}

// commit writes the changed layer (nl nil: deleted), the new head, a
// history entry and an audit entry in tx.
func (s *State[D]) commit(tx store.Tx, layers []Layer, name string, nl *Layer, action string, by Actor) (Head, error) {
	revs, err := revocations.Active(tx)
	if err != nil {
		return Head{}, err
	}
	if nl != nil {
		raw, err := json.Marshal(nl)
		if err != nil {
			return Head{}, err
		}
		if err := tx.Put(LayersBucket, name, raw); err != nil {
			return Head{}, err
		}
	} else if err := tx.Delete(LayersBucket, name); err != nil {
		return Head{}, err
	}
	// Rank changes of one layer reorder others; their records are unchanged.
	head, err := AdvanceHead(tx, layers, revs)
	if err != nil {
		return head, err
	}
	now := s.opt.Now().UTC()
	var lv uint64
	if nl != nil {
		lv = nl.Version
	}
	seq, err := tx.NextSequence(HistoryBucket)
	if err != nil {
		return head, err
	}
	raw, err := json.Marshal(HistoryEntry{Seq: seq, Time: now, Action: action, Layer: name, LayerVersion: lv,
		PolicyVersion: head.Version, Revision: head.Revision, Actor: by.ID, Document: nl})
	if err != nil {
		return head, err
	}
	if err := tx.Put(HistoryBucket, audit.SeqKey(seq), raw); err != nil {
		return head, err
	}
	auditAction := audit.ActionPolicyPut
	detail := map[string]any{"change": action, "layerVersion": lv, "policyVersion": head.Version, "revision": head.Revision}
	if nl == nil {
		auditAction = audit.ActionPolicyDelete
	} else {
		detail["target"] = nl.Target.String()
	}
	return head, audit.Append(tx, audit.Entry{Time: now, Action: auditAction, Actor: by.ID, Role: by.Role, Object: name,
		Detail: detail})
}
