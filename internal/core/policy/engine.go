package policy

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/internal/core/toolpin"
	"github.com/wharfhq/wharf/plugin"
)

//go:embed rego/wharf.rego
var builtinModule string

// BuiltinModule returns the Rego source of the standard keys
// (policy/rego/wharf.rego), for tools that compile it themselves.
func BuiltinModule() string { return builtinModule }

// BuiltinModuleFile is the file name the built-in module compiles under.
const BuiltinModuleFile = "wharf.rego"

// DecisionQuery is the decision as one object, for Rego tests and tools.
const DecisionQuery = "data.wharf.policy.decision"

// OutcomeQuery is the query every decision evaluates: the same answer as
// DecisionQuery as one set of tagged entries (["deny", reason],
// ["warning", message], ["forced", state]), which OPA builds without
// entering the rules that do not apply (see rego/wharf.rego).
const OutcomeQuery = "data.wharf.policy.outcome"

// Reason says which layer and rule denied, and why.
type Reason struct {
	Layer   string `json:"layer"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
	order   int
}

// Decision is policy's answer to a Request.
type Decision struct {
	Allowed bool `json:"allowed"`
	// Forced is "on" or "off" when managed enabledPlugins forces the plugin.
	Forced        string   `json:"forced,omitempty"`
	Reasons       []Reason `json:"reasons"`
	Warnings      []string `json:"warnings"`
	PolicyVersion string   `json:"policyVersion"`
}

// Denial is the cause inside the *plugin.Error of a denied request; reach it
// with errors.As to show every reason.
type Denial struct {
	Request  Request
	Decision Decision
}

func (d *Denial) Error() string {
	var parts []string
	for _, r := range d.Decision.Reasons {
		parts = append(parts, fmt.Sprintf("%s (policy layer %s, rule %s)", r.Message, r.Layer, r.Rule))
	}
	return "denied: " + strings.Join(parts, "; ")
}

// Err is nil when the decision allows, else a *plugin.Error (layer policy,
// type policy-denied) naming the deciding layer and rule, with a hint.
func (d Decision) Err(req Request) error {
	if d.Allowed {
		return nil
	}
	hint := "run: wharf policy check " + req.target()
	if len(d.Reasons) > 0 {
		r := d.Reasons[0]
		who := "whoever manages the " + r.Layer + " policy layer"
		if r.Layer == "default" {
			who = "your administrator"
		}
		hint = fmt.Sprintf("this is an administrator's decision: ask %s about %s; to see every layer's verdict run: wharf policy check %s", who, ruleWords(r.Rule), req.target())
		if req.Action == ActionAddMarketplace || req.Action == ActionUpdateMarketplace || req.Action == ActionSideload || req.Action == ActionFetchSource {
			hint = fmt.Sprintf("this is an administrator's decision: ask %s about %s", who, ruleWords(r.Rule))
		}
		if r.Rule == KeyDeniedCapabilities || r.Rule == KeyRequireDeclaredHosts || r.Rule == KeyDeniedFindings {
			// Decided on the tree's content, which wharf policy check
			// does not read: wharf show lists it.
			hint = fmt.Sprintf("this is an administrator's decision: ask %s about %s; to see what the plugin's tree does run: wharf show %s", who, ruleWords(r.Rule), req.target())
		}
	}
	return &plugin.Error{Layer: plugin.LayerPolicy, Type: plugin.TypePolicyDenied, Object: req.target(),
		Err: &Denial{Request: req, Decision: d}, Hint: hint}
}

// ruleWords names a deciding rule for a person: a settings key as the
// setting it is, an admin Rego rule as such.
func ruleWords(rule string) string {
	switch rule {
	case "admin", "rule", "evaluation":
		return "their Rego rules"
	case "unreadable":
		return "the managed file wharf cannot read"
	case "request", "":
		return "this request"
	}
	return "the " + rule + " setting"
}

// Option configures an Engine.
type Option func(*Engine)

// WithCache keeps up to n decisions per policy version. A hit returns the
// decision computed for the same request under the same version.
func WithCache(n int) Option { return func(e *Engine) { e.cacheSize = n } }

// WithGitHubHost names the GitHub Enterprise host that owner/repo sources
// are fetched from ("" for github.com): the command's github-host
// configuration. The engine reads requests with it, never managed entries
// (see layerGitHubHost). Without it the engine reads WHARF_GITHUB_HOST.
func WithGitHubHost(host string) Option {
	h := strings.TrimSpace(host)
	return func(e *Engine) { e.githubHost = &h }
}

// WithLoader sets where Reload reads layers from.
func WithLoader(load func() ([]Layer, error)) Option { return func(e *Engine) { e.load = load } }

// Engine evaluates policy. It is safe for concurrent use: decisions read an
// immutable state (compiled once, on first use) that Reload and Replace
// swap atomically.
type Engine struct {
	load      func() ([]Layer, error)
	cacheSize int
	reloadMu  sync.Mutex
	cur       atomic.Pointer[state]
	// compiles counts the prepared queries built (tests).
	compiles atomic.Int64
	// evals counts the Rego evaluations run (Evaluations).
	evals atomic.Int64
	memo  *memo // the decision memo; nil only under WithCache
	revs  atomic.Pointer[Revocations]
	pins  atomic.Pointer[[]toolpin.Pin] // the bundles' (SetToolPins)
	adms  atomic.Pointer[[]*Admissions]
	// githubHost is where owner/repo requests are fetched from
	// (WithGitHubHost); nil reads WHARF_GITHUB_HOST when the engine is built.
	githubHost *string
	clock      func() time.Time // decides which waivers expired (WithClock)
}

type compiledLayer struct {
	Name     string
	Origin   string
	Settings *settings.Settings
	Lockdown bool
	// HasModules: the layer has admin Rego modules.
	HasModules bool
	// Caps are the layer's deniedCapabilities, requireDeclaredHosts and
	// deniedFindings (capdeny.go).
	Caps capabilityRules
}

type state struct {
	version string
	// layerSums hold a hash of each layer's inputs (name, origin,
	// documents, modules, unreadable files), highest first (Extends).
	layerSums []string
	layers    []compiledLayer
	modules   map[string]*ast.Module
	data      ast.Object
	facts     *factIndex
	warnings  []string
	// pins are the layers' mcpToolPins (see ToolPins).
	pins toolpin.Set
	// unreadable: a managed file of a layer cannot be read; every
	// decision denies with these reasons.
	unreadable []Reason
	once       sync.Once // prepare
	prepErr    error
	pq         rego.PreparedEvalQuery
	setup      *evalSetup
	cache      *decisionCache
}

// NewEngine reads layers (highest first): it computes the policy version,
// parses the settings and the admin modules and checks that the modules
// compile, and reports any problem. The prepared query is compiled with the
// built-in module on the first decision that needs an evaluation.
func NewEngine(layers []Layer, opts ...Option) (*Engine, error) {
	e := &Engine{}
	for _, o := range opts {
		o(e)
	}
	if e.memo == nil && e.cacheSize == 0 {
		e.memo = &memo{} // decisions are memoized in memory (see WithMemoFile)
	}
	if e.githubHost == nil {
		h := envGitHubHost()
		e.githubHost = &h
	}
	st, err := e.compile(liveWaivers(layers, e.clock))
	if err != nil {
		return nil, err
	}
	e.cur.Store(st)
	return e, nil
}

// Open builds an Engine from Sources; Reload re-reads them.
func Open(src Sources, opts ...Option) (*Engine, error) {
	layers, err := src.Load()
	if err != nil {
		return nil, err
	}
	return NewEngine(layers, append([]Option{WithLoader(src.Load)}, opts...)...)
}

// Evaluations is the number of Rego evaluations this engine ran: the
// decisions neither the memo nor the cache answered. It is what a caller
// measuring its start, or a test, counts (see MemoHits for the others).
func (e *Engine) Evaluations() int64 { return e.evals.Load() }

// Version identifies the compiled policy: a hash over every input document
// and module.
func (e *Engine) Version() string { return e.cur.Load().version }

// ReadsContent reports whether a decision of the policy in force can
// depend on a request's Content: a layer sets deniedCapabilities,
// requireDeclaredHosts or deniedFindings, or has admin Rego rules (which
// may read input.capabilities and input.findings). When it cannot, a
// caller may leave Content out and decide the same.
func (e *Engine) ReadsContent() bool {
	for _, l := range e.cur.Load().layers {
		if l.HasModules || !l.Caps.empty() {
			return true
		}
	}
	return false
}

// Warnings are the problems found in the layers' documents (unknown keys,
// invalid values that fail closed, unknown surfaces).
func (e *Engine) Warnings() []string { return append([]string(nil), e.cur.Load().warnings...) }

// LayerNames lists the compiled layers, highest first.
func (e *Engine) LayerNames() []string {
	var out []string
	for _, l := range e.cur.Load().layers {
		out = append(out, l.Name)
	}
	return out
}

// Reload re-reads the layers from the loader and swaps them in when anything
// changed. It reports whether the version changed. Without a loader it does
// nothing.
func (e *Engine) Reload(ctx context.Context) (bool, error) {
	if e.load == nil {
		return false, nil
	}
	layers, err := e.load()
	if err != nil {
		return false, err
	}
	return e.Replace(ctx, layers)
}

// Replace reads layers as NewEngine does and swaps them in when their
// version differs. On error the previous policy stays in force.
func (e *Engine) Replace(ctx context.Context, layers []Layer) (bool, error) {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	layers = liveWaivers(layers, e.clock)
	if versionOf(collectInputs(layers)) == e.cur.Load().version {
		return false, nil
	}
	st, err := e.compile(layers)
	if err != nil {
		return false, err
	}
	e.cur.Store(st)
	return true, nil
}

// inputDoc is one input of the evaluation. The version hash and the compiled
// state are both derived from the same []inputDoc, so nothing the evaluation
// reads can be left out of the version.
type inputDoc struct {
	kind  string // "module" (built-in or admin), "layer", "settings"
	layer int
	name  string
	data  []byte
}

func collectInputs(layers []Layer) []inputDoc {
	in := []inputDoc{{kind: "module", layer: -1, name: BuiltinModuleFile, data: []byte(builtinModule)}}
	for i, l := range layers {
		in = append(in, inputDoc{kind: "layer", layer: i, name: l.Name, data: []byte(l.Origin)})
		for _, u := range l.Unreadable {
			in = append(in, inputDoc{kind: "unreadable", layer: i, name: u})
		}
		for _, d := range l.documents() {
			in = append(in, inputDoc{kind: "settings", layer: i, name: d.Name, data: d.Data})
		}
		if len(l.Waivers) > 0 {
			in = append(in, inputDoc{kind: "waivers", layer: i, data: waiverInput(l.Waivers)})
		}
		names := make([]string, 0, len(l.Modules))
		for n := range l.Modules {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			in = append(in, inputDoc{kind: "module", layer: i, name: n, data: []byte(l.Modules[n])})
		}
	}
	return in
}

func versionOf(in []inputDoc) string {
	h := sha256.New()
	var n [8]byte
	put := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for _, d := range in {
		put([]byte(d.kind))
		put([]byte(strconv.Itoa(d.layer)))
		put([]byte(d.name))
		put(d.data)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// layerSums hashes each layer's inputs apart.
func layerSums(in []inputDoc, n int) []string {
	per := make([][]inputDoc, n)
	for _, d := range in {
		if d.layer >= 0 {
			per[d.layer] = append(per[d.layer], d)
		}
	}
	sums := make([]string, n)
	for i, docs := range per {
		sums[i] = versionOf(docs)
	}
	return sums
}

// Extends reports whether e's policy contains m's: e's highest layers are
// m's layers, input for input (the same names, origins, documents, modules
// and unreadable files, in the same order), and e reads requests as m does
// (the same GitHub host). Lower layers only tighten, so then e denies
// every request m denies and keeps every plugin m forces on or off, and
// asking m as well would only repeat the evaluation. It returns the
// versions it compared: the answer holds while both engines are at them.
func (e *Engine) Extends(m *Engine) (version, mVersion string, ok bool) {
	es, ms := e.cur.Load(), m.cur.Load()
	ok = len(ms.layerSums) <= len(es.layerSums) && *e.githubHost == *m.githubHost
	for i := 0; ok && i < len(ms.layerSums); i++ {
		ok = es.layerSums[i] == ms.layerSums[i]
	}
	return es.version, ms.version, ok
}

func (e *Engine) compile(layers []Layer) (*state, error) {
	inputs := collectInputs(layers)
	st := &state{version: versionOf(inputs), layerSums: layerSums(inputs, len(layers)), modules: map[string]*ast.Module{}}
	if e.cacheSize > 0 {
		st.cache = newDecisionCache(e.cacheSize)
	}
	docs := make([][]settings.Document, len(layers))
	waivers := map[int]Waivers{}
	seen := map[string]bool{}
	for _, in := range inputs {
		switch in.kind {
		case "layer":
			if !layerNameRE.MatchString(in.name) {
				return nil, plugin.Errorf(plugin.LayerPolicy, TypeLayerInvalid, in.name, "name layers with lower-case letters, digits and _, starting with a letter",
					"policy layer name %q is not valid", in.name)
			}
			if seen[in.name] {
				return nil, plugin.Errorf(plugin.LayerPolicy, TypeLayerInvalid, in.name, "give every layer its own name", "two policy layers are named %q", in.name)
			}
			seen[in.name] = true
			st.layers = append(st.layers, compiledLayer{Name: in.name, Origin: string(in.data)})
		case "unreadable":
			st.unreadable = append(st.unreadable, Reason{Layer: st.layers[in.layer].Name, Rule: "unreadable", Message: in.name})
			st.warnings = append(st.warnings, fmt.Sprintf("policy layer %s: %s; every request is refused until it is fixed (fail closed)", st.layers[in.layer].Name, in.name))
		case "settings":
			docs[in.layer] = append(docs[in.layer], settings.Document{Scope: settings.ScopeManaged, Name: in.name, Data: in.data})
			st.warnings = append(st.warnings, st.addPins(in.name, in.data)...)
		case "waivers":
			var ws Waivers
			if err := json.Unmarshal(in.data, &ws); err != nil {
				return nil, err
			}
			waivers[in.layer] = ws
		case "module":
			if in.layer < 0 {
				// The built-in module (the same text in every state) is
				// parsed when the first state is compiled: see builtinParsed.
				continue
			}
			m, err := checkModule(st.layers[in.layer].Name, in.name, string(in.data))
			if err != nil {
				return nil, err
			}
			st.modules[st.layers[in.layer].Name+"/"+in.name] = m
			st.layers[in.layer].HasModules = true
		}
	}
	for i := range st.layers {
		l := &st.layers[i]
		var merged *settings.Settings
		for _, d := range docs[i] {
			s, err := settings.Parse(d.Name, d.Data)
			if err != nil {
				l.Lockdown = true
				l.Caps.fail(d.Name)
				st.warnings = append(st.warnings, fmt.Sprintf("policy layer %s: %v; every restriction is assumed until it is fixed (fail closed)", l.Name, err))
				continue
			}
			for _, msg := range l.Caps.parse(d.Name, s.Unknown) {
				st.warnings = append(st.warnings, fmt.Sprintf("policy layer %s: %s", l.Name, msg))
			}
		}
		merged = settings.Merge(docs[i])
		for _, is := range merged.Issues {
			if strings.HasSuffix(is.Message, "; file skipped") {
				continue // reported above as a lockdown
			}
			st.warnings = append(st.warnings, fmt.Sprintf("policy layer %s: %s", l.Name, is))
		}
		l.Settings = merged
	}
	if m, err := adminModule(st.layers, st.modules); err != nil {
		return nil, err
	} else if m != nil {
		st.modules[adminModuleFile] = m
	}
	wd, warns := waiverData(st.layers, waivers)
	st.warnings = append(st.warnings, warns...)
	val, err := ast.InterfaceToValue(map[string]any{"wharf_index": buildIndex(st.layers), "wharf_waivers": wd})
	if err != nil {
		return nil, err
	}
	st.data = val.(ast.Object)
	st.facts = buildFacts(st.layers, *e.githubHost)
	if err := checkAdminCompiles(st.modules); err != nil {
		return nil, err
	}
	return st, nil
}

// prepare compiles the modules into the prepared query, once per state, on
// the first decision that needs an evaluation: a process whose answers all
// come from a cache or the memo never pays for it. A failure fails every
// evaluation of this state closed.
func (st *state) prepare(e *Engine) error {
	st.once.Do(func() {
		e.compiles.Add(1)
		store := inmem.NewFromASTObject(st.data)
		setup, err := newEvalSetup(context.Background(), store)
		if err != nil {
			st.prepErr = err
			return
		}
		opts := []func(*rego.Rego){
			rego.Query(OutcomeQuery),
			rego.Store(store),
			rego.SetRegoVersion(ast.RegoV1),
			rego.GenerateJSON(keepAST),
			// A builtin that fails (to_number("seven"), an invalid
			// regular expression) stops the evaluation with an error,
			// which refuses the request, instead of making the rule
			// silently not apply.
			rego.StrictBuiltinErrors(true),
		}
		builtin, err := builtinParsed()
		if err != nil {
			st.prepErr = compileError(err)
			return
		}
		opts = append(opts, rego.ParsedModule(uniquelyNamed(builtin, BuiltinModuleFile)))
		keys := make([]string, 0, len(st.modules))
		for k := range st.modules {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			opts = append(opts, rego.ParsedModule(uniquelyNamed(st.modules[k], k)))
		}
		pq, err := rego.New(opts...).PrepareForEval(context.Background())
		if err != nil {
			st.prepErr = compileError(err)
			return
		}
		st.pq, st.setup = pq, setup
	})
	return st.prepErr
}

// builtinParsed is the built-in module, parsed once per process. The
// compiler copies the modules it compiles, so every state shares it.
var builtinParsed = newBuiltinParser()

func newBuiltinParser() func() (*ast.Module, error) {
	return sync.OnceValues(func() (*ast.Module, error) {
		return ast.ParseModuleWithOpts(BuiltinModuleFile, builtinModule, ast.ParserOptions{RegoVersion: ast.RegoV1})
	})
}

// uniquelyNamed returns m under the name key. rego keeps parsed modules by
// the file name of their package clause, and two layers may each have an
// admin module of the same file name: under that name one would replace the
// other. The compiler copies modules, so a shallow copy will do.
func uniquelyNamed(m *ast.Module, key string) *ast.Module {
	mc := *m
	pkg := *m.Package
	loc := ast.Location{File: key}
	if pkg.Location != nil {
		loc = *pkg.Location
		loc.File = key
	}
	pkg.Location = &loc
	mc.Package = &pkg
	return &mc
}

func compileError(err error) error {
	return plugin.Errorf(plugin.LayerPolicy, TypeLayerInvalid, "policy", "fix the admin module named in the message; run: wharf policy test <dir>", "compiling policy: %v", err)
}

// checkAdminCompiles reports the admin modules' compile errors (undefined
// functions, unsafe variables, type errors...) when the policy is built,
// without compiling the built-in module, which is most of the cost and
// always compiles. Admin modules are compiled on their own, which gives
// the same errors as compiling them with the built-in module unless they
// refer to it (anything under data.wharf but data.wharf.admin): then
// everything is compiled now, as the evaluation would.
func checkAdminCompiles(modules map[string]*ast.Module) error {
	admin := map[string]*ast.Module{}
	refersToBuiltin := false
	wharf, adminRoot := ast.MustParseRef("data.wharf"), ast.MustParseRef("data.wharf.admin")
	outside := func(r ast.Ref) bool {
		return len(r) > 0 && r[0].Equal(ast.DefaultRootDocument) && wharf.HasPrefix(r.ConstantPrefix()) && !r.HasPrefix(adminRoot) ||
			r.HasPrefix(wharf) && !r.HasPrefix(adminRoot)
	}
	for k, m := range modules {
		if k == adminModuleFile {
			continue
		}
		admin[k] = m
		for _, imp := range m.Imports {
			if r, ok := imp.Path.Value.(ast.Ref); ok && outside(r) {
				refersToBuiltin = true
			}
		}
		ast.WalkRefs(m, func(r ast.Ref) bool {
			if outside(r) {
				refersToBuiltin = true
			}
			return refersToBuiltin
		})
	}
	if len(admin) == 0 {
		return nil
	}
	if refersToBuiltin {
		builtin, err := builtinParsed()
		if err != nil {
			return compileError(err)
		}
		admin = maps.Clone(modules)
		admin[BuiltinModuleFile] = builtin
	}
	c := ast.NewCompiler().WithDefaultRegoVersion(ast.RegoV1)
	if c.Compile(admin); c.Failed() {
		return compileError(c.Errors)
	}
	return nil
}

// Decide evaluates req against the current policy. An evaluation error
// returns a denying Decision together with the error, so a caller that only
// looks at Allowed still fails closed.
func (e *Engine) Decide(ctx context.Context, req Request) (Decision, error) {
	req = req.withSideloadSource()
	st := e.cur.Load()
	// The memo, kept between processes, is keyed by the request's fields
	// (memoKey): a hit builds no evaluation input. Only valid requests of
	// a readable policy are memoized.
	var mbuf [256]byte
	var mkey []byte
	if e.memo != nil && len(st.unreadable) == 0 {
		mkey = memoKey(mbuf[:0], req, st.facts)
		if d, ok := e.memo.get(st.version, mkey); ok {
			return d, nil
		}
	}
	if err := req.Validate(); err != nil {
		return Decision{Reasons: []Reason{{Layer: "default", Rule: "request", Message: err.Error()}}}, err
	}
	if len(st.unreadable) > 0 {
		d := Decision{PolicyVersion: st.version, Warnings: append([]string{}, st.warnings...), Reasons: slices.Clone(st.unreadable)}
		return d, plugin.Errorf(plugin.LayerPolicy, plugin.TypePolicyDenied, req.target(),
			"an administrator must make the managed file a regular file readable by every user, or remove it",
			"policy cannot be read, so the request is refused: %s", st.unreadable[0].Message)
	}
	// The evaluation input: the request (Input) and its facts under this
	// version. Its text, canonical (sorted keys), is the key of the cache,
	// which belongs to one version: every field the evaluation reads is
	// part of the key.
	input := req.evalInput(st.facts)
	var key string
	if st.cache != nil {
		key = input.String()
		if d, ok := st.cache.get(key); ok {
			d = d.clone()
			if e.memo != nil {
				e.memo.put(st.version, mkey, d)
			}
			return d, nil
		}
	}
	if err := st.prepare(e); err != nil {
		return st.failed(err)
	}
	e.evals.Add(1)
	d, err := st.eval(ctx, input)
	if err != nil {
		return d, err
	}
	if e.memo != nil {
		e.memo.put(st.version, mkey, d)
	}
	if st.cache != nil {
		st.cache.put(key, d)
		d = d.clone()
	}
	return d, nil
}

// failed is the denying decision of a policy that cannot be compiled or
// evaluated, with its error.
func (st *state) failed(err error) (Decision, error) {
	return Decision{PolicyVersion: st.version, Warnings: append([]string{}, st.warnings...),
			Reasons: []Reason{{Layer: "default", Rule: "evaluation", Message: err.Error()}}},
		plugin.Errorf(plugin.LayerPolicy, plugin.TypePolicyDenied, "policy", "fix the admin module named in the message; run: wharf policy test <dir>", "policy evaluation failed, so the request is refused: %v", err)
}

func (st *state) eval(ctx context.Context, input ast.Value) (Decision, error) {
	fail := st.failed
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	cache := getEvalCache()
	var buf [6]rego.EvalOption
	rs, err := st.pq.Eval(ctx, st.setup.options(ctx, input, cache, buf[:0])...)
	cache.release()
	if err != nil {
		return st.evalFailure(err)
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return fail(errors.New("the decision is undefined"))
	}
	d, err := toDecision(rs[0].Expressions[0].Value)
	if err != nil {
		return fail(err)
	}
	d.PolicyVersion = st.version
	if len(st.warnings) > 0 {
		d.Warnings = append(append([]string(nil), st.warnings...), d.Warnings...)
	}
	return d, nil
}

// toDecision reads data.wharf.policy.outcome, which the prepared query
// hands over as an AST term (see keepAST). An undefined outcome is an empty
// set: nothing denies.
func toDecision(v any) (Decision, error) {
	t, ok := v.(*ast.Term)
	if !ok {
		return Decision{}, fmt.Errorf("outcome is %T, not a term", v)
	}
	set, ok := t.Value.(ast.Set)
	if !ok {
		return Decision{}, fmt.Errorf("outcome is %s, not a set", ast.ValueName(t.Value))
	}
	var d Decision
	var bad error
	var warnings []string
	set.Foreach(func(et *ast.Term) {
		if bad != nil {
			return
		}
		e, ok := et.Value.(*ast.Array)
		if !ok || e.Len() != 2 {
			bad = fmt.Errorf("outcome entry %v is not a [tag, value] pair", et)
			return
		}
		tag, _ := e.Elem(0).Value.(ast.String)
		v := e.Elem(1).Value
		switch tag {
		case "deny":
			ro, ok := v.(ast.Object)
			if !ok {
				bad = fmt.Errorf("reason is %s, not an object", ast.ValueName(v))
				return
			}
			var rr Reason
			rr.Layer = stringAt(ro, fieldLayer)
			rr.Rule = stringAt(ro, fieldRule)
			rr.Message = stringAt(ro, fieldMessage)
			if o, ok := valueAt(ro, fieldOrder).(ast.Number); ok {
				if i, ok := o.Int(); ok {
					rr.order = i
				}
			}
			d.Reasons = append(d.Reasons, rr)
		case "warning":
			if s, ok := v.(ast.String); ok {
				warnings = append(warnings, string(s))
			}
		case "forced":
			s, ok := v.(ast.String)
			if !ok || d.Forced != "" && d.Forced != string(s) {
				bad = fmt.Errorf("forced state %v is not one string", v)
				return
			}
			d.Forced = string(s)
		default:
			bad = fmt.Errorf("outcome entry %v has an unknown tag", et)
		}
	})
	if bad != nil {
		return Decision{}, bad
	}
	if d.Reasons == nil {
		d.Reasons = []Reason{}
	}
	sort.SliceStable(d.Reasons, func(i, j int) bool {
		a, b := d.Reasons[i], d.Reasons[j]
		if a.order != b.order {
			return a.order < b.order
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return a.Message < b.Message
	})
	for i := range d.Reasons {
		d.Reasons[i].order = 0 // only for sorting: a decision read back from JSON is the same
	}
	// Sorted, as OPA's JSON form of a set is.
	sort.Strings(warnings)
	d.Warnings = warnings
	if d.Warnings == nil {
		d.Warnings = []string{}
	}
	d.Allowed = len(d.Reasons) == 0
	return d, nil
}

var (
	fieldLayer   = ast.StringTerm("layer")
	fieldRule    = ast.StringTerm("rule")
	fieldMessage = ast.StringTerm("message")
	fieldOrder   = ast.StringTerm("order")
)

func valueAt(o ast.Object, k *ast.Term) ast.Value {
	if t := o.Get(k); t != nil {
		return t.Value
	}
	return nil
}

func stringAt(o ast.Object, k *ast.Term) string {
	s, _ := valueAt(o, k).(ast.String)
	return string(s)
}

// keepAST hands query results over as AST terms: toDecision reads them
// directly instead of through a JSON-like copy.
func keepAST(t *ast.Term, _ *rego.EvalContext) (any, error) { return t, nil }

// noMetrics: decisions are not timed per evaluation.
var noMetrics = metrics.NoOp()

func (d Decision) clone() Decision {
	d.Reasons = slices.Clone(d.Reasons) // an empty list stays empty, not nil
	d.Warnings = slices.Clone(d.Warnings)
	return d
}

// decisionCache holds decisions of one policy version; it is dropped with
// its version on Reload. Bounded: when full it starts over.
type decisionCache struct {
	mu  sync.Mutex
	max int
	m   map[string]Decision
}

func newDecisionCache(n int) *decisionCache {
	return &decisionCache{max: n, m: make(map[string]Decision)}
}

func (c *decisionCache) get(k string) (Decision, bool) {
	c.mu.Lock()
	d, ok := c.m[k]
	c.mu.Unlock()
	return d, ok
}

func (c *decisionCache) put(k string, d Decision) {
	c.mu.Lock()
	if len(c.m) >= c.max {
		c.m = make(map[string]Decision, c.max)
	}
	c.m[k] = d
	c.mu.Unlock()
}
