// Package mcp supervises the MCP servers of the active plugin set: it
// starts stdio servers as child processes (or connects to HTTP and SSE
// ones) with the official Go SDK, performs the initialize handshake and
// tools/list, exposes the tools under their namespaced names
// ("mcp__plugin_<plugin>_<server>__<tool>"), and stops each server when its
// component is deactivated.
//
// Starting a server is an activation step that returns its undo, so a
// Supervisor plugs into agent.Runtime through Activator. A server that fails
// to start or crashes later is recorded in its Status, for its plugin, and
// isolated: its activation still succeeds (a broken server must not block a
// reload of everything else), and the other servers keep working.
//
// A server that crashes while running is started again after a backoff
// (1 s, doubling up to 30 s), at most Options.MaxRestarts times in a row; a
// server that stayed up for Options.StableAfter before crashing gets its full
// budget back. While it waits its state is "restarting"; once the budget is
// spent it stays "crashed", with the last exit and stderr in its Status. A
// stop (disable, reload, Close) ends a pending or running restart.
//
// Stdio servers run in their own process group with the SDK's IOTransport
// over pipes this package owns, so that a crash is seen the moment the
// process exits (with its exit status and the tail of its stderr) and a stop
// can end the whole group: stdin is closed first (the MCP shutdown), then
// SIGTERM, then SIGKILL.
//
// Tool definitions can be pinned (Options.Pins): after every tools/list,
// at start and at each notifications/tools/list_changed, the Supervisor
// hashes what a plugin's server lists (names, descriptions, input schemas;
// package toolpin) and compares it with the pins of that plugin and
// server. A server whose definitions drifted exposes none of its tools: it
// is stopped and failed, with a *toolpin.DriftError ("tool definitions
// changed since approval") in its Status, and it is not restarted until
// the pins change (Recheck). A server nothing pins works as it always did.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/agent/internal/proctree"
	"github.com/wharfhq/wharf/internal/core/toolpin"
	"github.com/wharfhq/wharf/plugin"
)

// States of a server.
const (
	StateRunning    = "running"
	StateFailed     = "failed"     // did not start or failed the handshake
	StateCrashed    = "crashed"    // exited or disconnected while running, no restart left
	StateRestarting = "restarting" // crashed; waiting to be started again
	StateStopped    = "stopped"
)

// Options configure a Supervisor.
type Options struct {
	// ProjectDir is CLAUDE_PROJECT_DIR for the servers, and the working
	// directory of stdio servers without their own cwd.
	ProjectDir string
	// BaseEnv is the environment servers start from (default os.Environ()).
	BaseEnv []string
	// StartTimeout bounds the start, handshake and tools/list (default 30 s).
	StartTimeout time.Duration
	// StopGrace is how long a stdio server may take to exit after its stdin
	// is closed, and again after SIGTERM (default 2 s).
	StopGrace time.Duration
	// HTTPClient is used for http and sse servers (default a client with a
	// 30 s timeout for each request).
	HTTPClient *http.Client
	// Stderr, when set, receives every stdio server's stderr, each line
	// prefixed with the server's name.
	Stderr io.Writer
	// ClientName and ClientVersion are sent in the initialize handshake.
	ClientName, ClientVersion string
	// MaxRestarts is how many times in a row a crashed server is started
	// again (default 5; negative: never).
	MaxRestarts int
	// RestartBackoff is the wait before the first restart; it doubles for
	// each further one, up to 30 s (default 1 s).
	RestartBackoff time.Duration
	// StableAfter is how long a server must have run before a crash for
	// the restarts before it to be forgotten (default 1 min).
	StableAfter time.Duration
	// Authorize shows the user the sign-in page of a remote (http or sse)
	// server whose .mcp.json entry has an "oauth" object with a
	// pre-registered "clientId": it gets the server's name and the
	// authorization URL, and should open it in a browser (or print it).
	// The browser's redirect comes back to
	// http://localhost:<oauth.callbackPort>/callback, which the Supervisor
	// listens on (on 127.0.0.1) while it waits; the whole sign-in counts
	// against StartTimeout. A nil Authorize makes such a server fail to
	// start with ErrSignInRequired when it asks for a sign-in. Tokens are
	// kept in memory only, for the life of the Supervisor (a restart of the
	// server reuses them; a new agent signs in again).
	Authorize func(ctx context.Context, server, authURL string) error
	// Pins returns the tool pins in force (a policy engine's ToolPins,
	// read at each check so a policy reload takes effect at the next
	// Recheck). Nil pins nothing.
	Pins func() toolpin.Set
}

// maxBackoff caps the wait between restarts.
const maxBackoff = 30 * time.Second

// Tool is one tool of a running server.
type Tool struct {
	// Name is what the model sees: mcp__plugin_<plugin>_<server>__<tool>.
	Name string `json:"name"`
	// Tool is the name the server gave it.
	Tool string `json:"tool"`
	// Server is the server's namespaced name: plugin:<plugin>:<server>.
	Server      string `json:"server"`
	Plugin      string `json:"plugin,omitempty"`
	Description string `json:"description,omitempty"`
	InputSchema any    `json:"inputSchema,omitempty"`
}

// Status is one server's state.
type Status struct {
	Server    string `json:"server"`
	Plugin    string `json:"plugin,omitempty"`
	Source    string `json:"source"`
	Transport string `json:"transport"`
	State     string `json:"state"`
	// PID is the stdio server's process id (0 for remote servers).
	PID   int `json:"pid,omitempty"`
	Tools int `json:"tools"`
	// ServerName and ServerVersion are what the server said in the handshake.
	ServerName    string `json:"serverName,omitempty"`
	ServerVersion string `json:"serverVersion,omitempty"`
	// Error says why a server failed or crashed, with the tail of its stderr.
	Error string `json:"error,omitempty"`
	// Restarts counts the times the server was started again after a
	// crash since it last ran for StableAfter.
	Restarts int `json:"restarts,omitempty"`
	// LastCrash says why the server last crashed, with the tail of its
	// stderr; it stays after a restart clears Error.
	LastCrash string `json:"lastCrash,omitempty"`
	// Name is the server's name in its plugin's .mcp.json (what tool pins
	// name); empty for servers of no plugin.
	Name string `json:"name,omitempty"`
	// ToolsHash is the hash of the tool definitions the server last
	// listed (toolpin.Hash).
	ToolsHash string `json:"toolsHash,omitempty"`
	// Drift: the definitions differ from a pin (Pinned is that pin's
	// hash); the server exposes no tools and Error says why.
	Drift  bool   `json:"drift,omitempty"`
	Pinned string `json:"pinned,omitempty"`
	// Definitions are the tool definitions ToolsHash is the hash of, as
	// the server listed them, for the inventory report.
	Definitions []toolpin.Tool `json:"-"`
}

// StartError is a server that could not be started, or failed its
// handshake. Its plugin is in Server (plugin:<plugin>:<server>).
type StartError struct {
	Server string
	Plugin string
	Err    error
	// Stderr is the tail of the server's stderr.
	Stderr string
}

func (e *StartError) Error() string {
	msg := fmt.Sprintf("MCP server %s", e.Server)
	if e.Plugin != "" {
		msg += " of plugin " + e.Plugin
	}
	msg += ": " + e.Err.Error()
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += "; its stderr ends with: " + s
	}
	return msg
}

func (e *StartError) Unwrap() error { return e.Err }

// Errors a server's configuration can have.
var (
	// ErrNoCommand: a stdio server without a command.
	ErrNoCommand = errors.New("stdio server has no command; set \"command\" in .mcp.json")
	// ErrNoURL: an http or sse server without a url.
	ErrNoURL = errors.New("remote server has no url; set \"url\" in .mcp.json")
	// ErrTransport: a transport this package does not speak.
	ErrTransport = errors.New("unsupported transport; use stdio, http or sse")
	// ErrNotRunning: a tool call to a server that is not running.
	ErrNotRunning = errors.New("MCP server is not running")
	// ErrUnknownTool: a tool name no running server exposes.
	ErrUnknownTool = errors.New("no running MCP server exposes this tool")
	// ErrUnknownServer: a server name the active set does not have.
	ErrUnknownServer = errors.New("no MCP server of that name in the active set")
)

// Supervisor runs MCP servers. It is safe for concurrent use.
type Supervisor struct {
	o Options

	mu     sync.Mutex
	serial int
	// runs holds every started server by name, oldest first: during a
	// reload a newer start of the same name may coexist with the older
	// one until the older undo runs; the newest is the live one.
	runs   map[string][]*run
	closed bool
	// oauth holds the sign-in handlers (and their tokens) of remote
	// servers by server, url and client id.
	oauth map[string]*auth.AuthorizationCodeHandler
}

// run is one start of one server.
type run struct {
	serial int
	comp   agent.Component
	status Status
	tools  []Tool

	session *sdk.ClientSession
	// cancel ends the run's own context, which outlives Start: a remote
	// transport's long-lived streams (SSE) are bound to the context of
	// Connect, so it must not be the caller's or a start timeout's.
	cancel context.CancelFunc
	cmd    *exec.Cmd
	tree   *proctree.Tree
	exited chan struct{} // closed when the process has been waited for
	stderr *tailBuffer

	// life ends when the run is stopped: it bounds every start of the run,
	// first or restart, and the waits between them.
	life context.Context
	end  context.CancelFunc

	mu       sync.Mutex
	stopping bool
	// held: the server was stopped because its definitions drifted; its
	// exit is not a crash and it is not restarted.
	held bool
	// starting is closed when a start in progress (the first, a restart,
	// or a Restart's) is over; nil when none is. The fields above belong to
	// that start until then, so stop waits for it.
	starting chan struct{}
	started  time.Time // when the current process passed its handshake

	slot *slot
}

// slot is what the undo of one Start stops: the run that Start made, or
// the run a Restart replaced it with.
type slot struct {
	mu     sync.Mutex
	cur    *run
	closed bool // the undo ran
}

// New returns a Supervisor.
func New(o Options) *Supervisor {
	if o.StartTimeout <= 0 {
		o.StartTimeout = 30 * time.Second
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 2 * time.Second
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if o.ClientName == "" {
		o.ClientName = "wharf"
	}
	if o.ClientVersion == "" {
		o.ClientVersion = "dev"
	}
	if o.MaxRestarts == 0 {
		o.MaxRestarts = 5
	}
	if o.RestartBackoff <= 0 {
		o.RestartBackoff = time.Second
	}
	if o.StableAfter <= 0 {
		o.StableAfter = time.Minute
	}
	return &Supervisor{o: o, runs: map[string][]*run{}, oauth: map[string]*auth.AuthorizationCodeHandler{}}
}

// Activator returns an agent.Activator that starts the MCP server
// components and hands every other component to next (nil: nothing to do
// for them). A server that fails to start does not fail the activation: it
// is recorded in Status and its undo clears that record.
func (s *Supervisor) Activator(next agent.Activator) agent.Activator {
	return agent.ActivatorFunc(func(ctx context.Context, c agent.Component) (func() error, error) {
		if c.Kind != plugin.KindMCPServer {
			if next == nil {
				return func() error { return nil }, nil
			}
			return next.Activate(ctx, c)
		}
		undo, _ := s.Start(ctx, c)
		return undo, nil
	})
}

// Start starts the MCP server component c, performs the handshake and lists
// its tools. The undo it returns is never nil: it stops the server (or
// forgets the failed start) and removes exactly this start, even when a newer
// start of the same server is live. The error, a *StartError, is also kept in
// Status.
func (s *Supervisor) Start(ctx context.Context, c agent.Component) (undo func() error, err error) {
	r := newRun(c)
	sl := &slot{cur: r}
	r.slot = sl // before r is published: Restart reads it
	done := make(chan struct{})
	r.starting = done // a Restart that stops r meanwhile waits for this start
	defer func() {
		r.mu.Lock()
		r.starting = nil
		r.mu.Unlock()
		close(done)
	}()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		r.end()
		return func() error { return nil }, &StartError{Server: c.Name, Plugin: r.status.Plugin, Err: errors.New("supervisor is closed")}
	}
	s.serial++
	r.serial = s.serial
	s.runs[c.Name] = append(s.runs[c.Name], r)
	s.mu.Unlock()
	undo = func() error {
		sl.mu.Lock()
		sl.closed = true
		cur := sl.cur
		sl.mu.Unlock()
		return s.stop(cur)
	}
	if serr := s.start(ctx, r); serr != nil {
		return undo, s.failed(r, StateFailed, serr)
	}
	return undo, nil
}

func newRun(c agent.Component) *run {
	r := &run{comp: c, exited: make(chan struct{}), stderr: newTailBuffer(4 << 10)}
	r.life, r.end = context.WithCancel(context.Background())
	r.status = Status{Server: c.Name, Source: c.Source, State: StateFailed}
	if !c.Plugin.IsZero() {
		r.status.Plugin = c.Plugin.String()
		r.status.Name = c.Local
	}
	return r
}

// failed ends a start that failed (releasing its context) and records it
// in the run's Status under state.
func (s *Supervisor) failed(r *run, state string, err error) *StartError {
	if r.life.Err() != nil {
		// The start was cut short on purpose; what the process did then
		// (a broken pipe, an exit) is not the reason.
		err = fmt.Errorf("%w: stopped while it started (a newer restart, a disable or a reload replaced it)", ErrNotRunning)
	}
	s.mu.Lock()
	if r.cancel != nil {
		r.cancel()
	}
	s.mu.Unlock()
	se := &StartError{Server: r.comp.Name, Plugin: r.status.Plugin, Err: err, Stderr: r.stderr.String()}
	s.setStatus(r, func(st *Status) { st.State, st.Error = state, se.Error() })
	return se
}

// Restart stops the named server (plugin:<plugin>:<server>) whatever its
// state, running, restarting, crashed, given up or failed to start, and
// starts it again as a new process with a fresh restart budget. The undo of
// the Start that made it stops the new process. It returns the server's
// Status after the start; a start that fails is a *StartError and is in
// that Status too.
func (s *Supervisor) Restart(ctx context.Context, server string) (Status, error) {
	s.mu.Lock()
	runs := s.runs[server]
	if len(runs) == 0 {
		s.mu.Unlock()
		return Status{}, fmt.Errorf("%w: %s", ErrUnknownServer, server)
	}
	old := runs[len(runs)-1]
	s.mu.Unlock()

	sl := old.slot
	sl.mu.Lock()
	if sl.closed || sl.cur != old {
		sl.mu.Unlock()
		return Status{}, fmt.Errorf("%w: %s is being stopped or restarted; try again", ErrNotRunning, server)
	}
	r := newRun(old.comp)
	r.slot = sl
	r.status.State = StateRestarting
	done := make(chan struct{})
	r.starting = done
	s.mu.Lock()
	i := slices.Index(s.runs[server], old)
	if s.closed || i < 0 {
		s.mu.Unlock()
		sl.mu.Unlock()
		r.end()
		return Status{}, fmt.Errorf("%w: %s (the supervisor is closing)", ErrNotRunning, server)
	}
	// The new run takes the old one's place among the starts of this name.
	s.serial++
	r.serial = s.serial
	runs = slices.Clone(s.runs[server])
	runs[i] = r
	s.runs[server] = runs
	// Until the new process lists its tools, a call to one of the old
	// ones says the server is restarting rather than that no server has it.
	r.tools = old.tools
	r.status.Error = "restarting on request"
	s.mu.Unlock()
	sl.cur = r
	sl.mu.Unlock()

	s.stop(old)
	err := s.start(ctx, r)
	r.mu.Lock()
	r.starting = nil
	r.mu.Unlock()
	close(done)
	if err != nil {
		se := s.failed(r, StateFailed, err)
		return s.statusOf(r), se
	}
	return s.statusOf(r), nil
}

func (s *Supervisor) statusOf(r *run) Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return r.status
}

func (s *Supervisor) start(ctx context.Context, r *run) error {
	if r.comp.MCP == nil {
		return errors.New("component has no MCP configuration")
	}
	cfg := *r.comp.MCP
	env := s.env(r.comp)
	lookup := envLookup(env)
	runCtx, runCancel := context.WithCancel(r.life)
	s.mu.Lock()
	r.cancel = runCancel
	s.mu.Unlock()
	// Until the start is over, the caller's cancellation and the start
	// timeout end the run too.
	stopEarly := context.AfterFunc(ctx, runCancel)
	timer := time.AfterFunc(s.o.StartTimeout, runCancel)
	defer func() {
		stopEarly()
		timer.Stop()
	}()
	ctx, cancel := context.WithTimeout(ctx, s.o.StartTimeout)
	defer cancel()

	client := sdk.NewClient(&sdk.Implementation{Name: s.o.ClientName, Version: s.o.ClientVersion}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { go s.toolsChanged(r) },
	})
	var transport sdk.Transport
	kind := strings.ToLower(cfg.Type)
	switch kind {
	case "", "stdio", "streamable-http":
		kind = map[string]string{"": "stdio", "stdio": "stdio", "streamable-http": "http"}[kind]
	}
	s.setStatus(r, func(st *Status) { st.Transport = kind })
	switch kind {
	case "stdio":
		if strings.TrimSpace(cfg.Command) == "" {
			return ErrNoCommand
		}
		t, err := s.spawn(r, cfg, env, lookup)
		if err != nil {
			return err
		}
		transport = t
	case "http", "sse":
		url := expandVars(cfg.URL, lookup)
		if url == "" {
			return ErrNoURL
		}
		hc := s.o.HTTPClient
		if len(cfg.Headers) > 0 {
			h := http.Header{}
			for k, v := range cfg.Headers {
				h.Set(k, expandVars(v, lookup))
			}
			c := *hc
			base := c.Transport
			if base == nil {
				base = http.DefaultTransport
			}
			c.Transport = headerTransport{h: h, base: base}
			hc = &c
		}
		oc, err := parseOAuth(cfg.OAuth())
		if err != nil {
			return err
		}
		var oh *auth.AuthorizationCodeHandler
		if oc != nil {
			if oh, err = s.oauthHandler(r.comp.Name, url, oc); err != nil {
				return err
			}
		}
		if kind == "sse" {
			if oh != nil {
				// The SDK's SSE transport takes no OAuth handler: the
				// same steps, in the HTTP client.
				c := *hc
				base := c.Transport
				if base == nil {
					base = http.DefaultTransport
				}
				c.Transport = &oauthTransport{h: oh, base: base}
				hc = &c
			}
			transport = &sdk.SSEClientTransport{Endpoint: url, HTTPClient: hc}
		} else {
			st := &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
			if oh != nil {
				st.OAuthHandler = oh
			}
			transport = st
		}
	default:
		return fmt.Errorf("%w (type %q)", ErrTransport, cfg.Type)
	}

	session, err := client.Connect(runCtx, transport, nil)
	if err != nil {
		if errors.Is(err, ErrSignInRequired) {
			return ErrSignInRequired
		}
		return s.failStart(r, "initialize handshake failed", err)
	}
	s.mu.Lock()
	r.session = session
	s.mu.Unlock()
	tools, defs, hash, err := s.listTools(ctx, r, session)
	if err != nil {
		session.Close()
		return s.failStart(r, "tools/list failed", err)
	}
	s.setStatus(r, func(st *Status) { st.ToolsHash, st.Definitions = hash, defs })
	if err := s.checkPins(r, hash); err != nil {
		// Nothing of an unapproved server stays up: not its tools, not
		// its process.
		session.Close()
		s.endProcess(r)
		return err
	}
	init := session.InitializeResult()
	s.mu.Lock()
	r.tools = tools
	r.status.State = StateRunning
	r.status.Error = ""
	r.status.Tools = len(tools)
	if init != nil && init.ServerInfo != nil {
		r.status.ServerName, r.status.ServerVersion = init.ServerInfo.Name, init.ServerInfo.Version
	}
	s.mu.Unlock()
	r.mu.Lock()
	r.started = time.Now()
	r.mu.Unlock()
	go s.watch(r)
	return nil
}

// listTools lists a server's tools under their namespaced names, with the
// hash of their definitions.
func (s *Supervisor) listTools(ctx context.Context, r *run, session *sdk.ClientSession) ([]Tool, []toolpin.Tool, string, error) {
	var tools []Tool
	var defs []toolpin.Tool
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			return nil, nil, "", err
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, nil, "", fmt.Errorf("tool %q: inputSchema: %w", t.Name, err)
		}
		defs = append(defs, toolpin.Tool{Name: t.Name, Description: t.Description, InputSchema: schema})
		tools = append(tools, Tool{
			Name:        r.comp.ToolName(t.Name),
			Tool:        t.Name,
			Server:      r.comp.Name,
			Plugin:      r.status.Plugin,
			Description: t.Description,
			InputSchema: t.InputSchema,
		})
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	hash, err := toolpin.Hash(defs)
	if err != nil {
		return nil, nil, "", fmt.Errorf("the tool definitions cannot be hashed: %w", err)
	}
	return tools, defs, hash, nil
}

// pins returns the pins in force.
func (s *Supervisor) pins() toolpin.Set {
	if s.o.Pins == nil {
		return toolpin.Set{}
	}
	return s.o.Pins()
}

// pinned reports whether a pin names r's server.
func (s *Supervisor) pinned(r *run) bool {
	return r.status.Plugin != "" && s.pins().Pinned(r.status.Plugin, r.comp.Local)
}

// checkPins compares the hash of r's definitions with the pins of its
// plugin and server, and records the outcome in its Status.
func (s *Supervisor) checkPins(r *run, hash string) error {
	if r.status.Plugin == "" {
		return nil // only plugins' servers are pinned
	}
	err := s.pins().Check(r.status.Plugin, r.comp.Local, hash)
	var d *toolpin.DriftError
	errors.As(err, &d)
	s.setStatus(r, func(st *Status) {
		st.Drift, st.Pinned = d != nil, ""
		if d != nil {
			st.Pinned = d.Pinned
		}
	})
	return err
}

// endProcess ends a stdio server's process group and waits for it.
func (s *Supervisor) endProcess(r *run) {
	if r.cmd == nil || r.tree == nil {
		return
	}
	r.tree.Kill()
	<-r.exited
}

// toolsChanged handles a server's notifications/tools/list_changed: a
// pinned server's definitions are listed and checked again; on drift its
// tools are withdrawn and it is stopped. Servers nothing pins are left as
// they are.
func (s *Supervisor) toolsChanged(r *run) {
	s.mu.Lock()
	session, state := r.session, r.status.State
	s.mu.Unlock()
	if session == nil || state != StateRunning || !s.pinned(r) {
		return
	}
	ctx, cancel := context.WithTimeout(r.life, s.o.StartTimeout)
	defer cancel()
	tools, defs, hash, err := s.listTools(ctx, r, session)
	if err != nil {
		if r.life.Err() == nil {
			s.hold(r, fmt.Errorf("tools/list after notifications/tools/list_changed failed: %w", err))
		}
		return
	}
	s.setStatus(r, func(st *Status) { st.ToolsHash, st.Definitions = hash, defs })
	if err := s.checkPins(r, hash); err != nil {
		s.hold(r, err)
		return
	}
	s.mu.Lock()
	r.tools = tools
	r.status.Tools = len(tools)
	s.mu.Unlock()
}

// hold withdraws a running server's tools, fails it with err and stops its
// process; its exit is not a crash, and it is not restarted.
func (s *Supervisor) hold(r *run, err error) {
	r.mu.Lock()
	if r.stopping || r.held {
		r.mu.Unlock()
		return
	}
	r.held = true
	r.mu.Unlock()
	se := &StartError{Server: r.comp.Name, Plugin: r.status.Plugin, Err: err}
	s.mu.Lock()
	r.tools = nil
	r.status.State, r.status.Error, r.status.Tools, r.status.PID = StateFailed, se.Error(), 0, 0
	session := r.session
	s.mu.Unlock()
	if session != nil {
		session.Close()
	}
	s.endProcess(r)
}

// Recheck compares every plugin server with the pins in force now (call it
// after a policy reload): a running server whose definitions no longer
// match is held (no tools, stopped); a server held for drift whose last
// definitions the pins now accept is started again, listing and checking
// its definitions anew. It returns the errors of those starts.
func (s *Supervisor) Recheck(ctx context.Context) error {
	type cand struct {
		r      *run
		status Status
	}
	s.mu.Lock()
	var all []cand
	for _, runs := range s.runs {
		r := runs[len(runs)-1]
		if r.status.Plugin != "" && r.status.ToolsHash != "" {
			all = append(all, cand{r, r.status})
		}
	}
	s.mu.Unlock()
	pins := s.pins()
	var errs []error
	for _, c := range all {
		err := pins.Check(c.status.Plugin, c.r.comp.Local, c.status.ToolsHash)
		switch {
		case c.status.State == StateRunning && err != nil:
			s.checkPins(c.r, c.status.ToolsHash)
			s.hold(c.r, err)
		case c.status.Drift && c.status.State == StateFailed && err == nil:
			if _, err := s.Restart(ctx, c.status.Server); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// failStart ends a start that got as far as the transport: for a stdio
// server it kills the process and says how it exited.
func (s *Supervisor) failStart(r *run, what string, err error) error {
	if r.cmd == nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	select {
	case <-r.exited:
	case <-time.After(200 * time.Millisecond):
		// Still running: a server that does not speak MCP.
		r.tree.Kill()
		<-r.exited
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: the process %s", what, exitDescription(r.cmd))
}

// spawn starts a stdio server's process in its own group, with pipes this
// package owns (so waiting for the process never races the SDK's reads).
func (s *Supervisor) spawn(r *run, cfg plugin.MCPServer, env []string, lookup func(string) (string, bool)) (sdk.Transport, error) {
	args := make([]string, len(cfg.Args))
	for i, a := range cfg.Args {
		args[i] = expandVars(a, lookup)
	}
	cmd := exec.Command(expandVars(cfg.Command, lookup), args...)
	for k, v := range cfg.Env {
		env = append(env, k+"="+expandVars(v, lookup))
	}
	cmd.Env = env
	cmd.Dir = expandVars(cfg.Cwd, lookup)
	if cmd.Dir == "" {
		cmd.Dir = s.o.ProjectDir
	}
	tree := proctree.New(cmd)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	var errSink io.Writer = r.stderr
	if s.o.Stderr != nil {
		errSink = io.MultiWriter(r.stderr, &prefixWriter{w: s.o.Stderr, prefix: r.comp.Name + ": "})
	}
	cmd.Stderr = errSink
	if err := tree.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("cannot start %q: %w", cfg.Command, err)
	}
	inR.Close()
	outW.Close()
	r.cmd, r.tree = cmd, tree
	s.mu.Lock()
	r.status.PID = cmd.Process.Pid
	s.mu.Unlock()
	exited := r.exited
	go func() {
		tree.Wait()
		outR.Close()
		close(exited)
	}()
	return &sdk.IOTransport{Reader: outR, Writer: inW}, nil
}

// watch waits for a running server to end by itself, records the crash and
// starts the server again while its restart budget lasts.
func (s *Supervisor) watch(r *run) {
	var reason string
	if r.cmd != nil {
		<-r.exited
		reason = "the process " + exitDescription(r.cmd)
		r.session.Close()
	} else {
		err := r.session.Wait()
		reason = "the connection closed"
		if err != nil {
			reason += ": " + err.Error()
		}
	}
	r.mu.Lock()
	stopping := r.stopping || r.held
	stable := time.Since(r.started) >= s.o.StableAfter
	r.mu.Unlock()
	if stopping {
		return
	}
	msg := (&StartError{Server: r.comp.Name, Plugin: r.status.Plugin, Err: errors.New("crashed: " + reason), Stderr: r.stderr.String()}).Error()
	// The tools stay recorded, so a call to one says the server crashed
	// rather than that the tool is unknown; Tools lists running servers only.
	s.setStatus(r, func(st *Status) {
		st.State, st.Error, st.LastCrash, st.Tools = StateCrashed, msg, msg, 0
		if stable {
			st.Restarts = 0
		}
	})
	s.restart(r)
}

// restart starts a crashed run again after a backoff, until a start
// succeeds (its watch takes over), the budget is spent or the run is
// stopped.
func (s *Supervisor) restart(r *run) {
	for {
		s.mu.Lock()
		n := r.status.Restarts
		s.mu.Unlock()
		if s.o.MaxRestarts < 0 || n >= s.o.MaxRestarts {
			if s.o.MaxRestarts > 0 {
				s.setStatus(r, func(st *Status) {
					st.Error += fmt.Sprintf(" (gave up after %d restarts; start it again with the protocol's mcp_restart, or disable and enable its plugin)", n)
				})
			}
			return
		}
		wait := s.o.RestartBackoff << n
		if wait > maxBackoff || wait <= 0 {
			wait = maxBackoff
		}
		s.setStatus(r, func(st *Status) { st.State = StateRestarting })
		t := time.NewTimer(wait)
		select {
		case <-r.life.Done():
			t.Stop()
			return
		case <-t.C:
		}
		r.mu.Lock()
		if r.stopping {
			r.mu.Unlock()
			return
		}
		done := make(chan struct{})
		r.starting = done
		r.mu.Unlock()

		r.cmd, r.exited, r.stderr = nil, make(chan struct{}), newTailBuffer(4<<10)
		s.setStatus(r, func(st *Status) { st.Restarts++; st.PID = 0 })
		s.mu.Lock()
		r.session, r.cancel = nil, nil
		s.mu.Unlock()
		err := s.start(r.life, r)

		r.mu.Lock()
		r.starting = nil
		r.mu.Unlock()
		close(done)
		if err == nil {
			return
		}
		if errors.As(err, new(*toolpin.DriftError)) {
			// Starting it again lists the same definitions: wait for
			// the pins to change (Recheck).
			s.failed(r, StateFailed, err)
			return
		}
		s.failed(r, StateCrashed, fmt.Errorf("restart failed: %w", err))
	}
}

func (s *Supervisor) setStatus(r *run, f func(*Status)) {
	s.mu.Lock()
	f(&r.status)
	s.mu.Unlock()
}

// stop ends one start: closes the session (stdin EOF for stdio servers),
// then SIGTERM and SIGKILL to the process group if it lingers, and removes
// the run.
func (s *Supervisor) stop(r *run) error {
	r.mu.Lock()
	already := r.stopping
	r.stopping = true
	busy := r.starting
	r.mu.Unlock()
	// Ending the run's life cuts a pending restart's wait and a restart's
	// start short; the teardown below then waits for that start to be over.
	r.end()
	if busy != nil {
		<-busy
	}
	if !already {
		if r.session != nil {
			r.session.Close()
		}
		s.mu.Lock()
		cancel := r.cancel
		s.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		if r.cmd != nil && r.cmd.Process != nil {
			select {
			case <-r.exited:
			case <-time.After(s.o.StopGrace):
				r.tree.Terminate()
				select {
				case <-r.exited:
				case <-time.After(s.o.StopGrace):
					r.tree.Kill()
					<-r.exited
				}
			}
			// Whatever the server started in its group goes with it.
			r.tree.Kill()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	runs := s.runs[r.comp.Name]
	for i, x := range runs {
		if x == r {
			runs = append(runs[:i:i], runs[i+1:]...)
			break
		}
	}
	if len(runs) == 0 {
		delete(s.runs, r.comp.Name)
	} else {
		s.runs[r.comp.Name] = runs
	}
	return nil
}

// Tools returns the tools of every running server, by name.
func (s *Supervisor) Tools() []Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Tool
	for _, runs := range s.runs {
		r := runs[len(runs)-1]
		if r.status.State == StateRunning {
			out = append(out, r.tools...)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Status returns every server's state (the newest start of each), by name.
func (s *Supervisor) Status() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Status
	for _, runs := range s.runs {
		out = append(out, runs[len(runs)-1].status)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Server < out[j].Server })
	return out
}

// CallTool calls a tool by its namespaced name on the server that exposes it.
func (s *Supervisor) CallTool(ctx context.Context, name string, args any) (*sdk.CallToolResult, error) {
	s.mu.Lock()
	var target *run
	var session *sdk.ClientSession
	var tool, state, why string
	for _, runs := range s.runs {
		r := runs[len(runs)-1]
		for _, t := range r.tools {
			if t.Name == name {
				target, session, tool, state, why = r, r.session, t.Tool, r.status.State, r.status.Error
			}
		}
	}
	s.mu.Unlock()
	if target == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTool, name)
	}
	if state != StateRunning {
		return nil, fmt.Errorf("%w: %s (%s)", ErrNotRunning, target.comp.Name, why)
	}
	return session.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
}

// CallServerTool calls tool (the name the server gave it) of the server
// named server (its namespaced name: plugin:<plugin>:<server>, or the bare
// name of a settings server), as an mcp_tool hook does. A name the active
// set does not have is ErrUnknownServer; a server that is not running,
// ErrNotRunning; a tool it does not expose, ErrUnknownTool.
func (s *Supervisor) CallServerTool(ctx context.Context, server, tool string, args any) (*sdk.CallToolResult, error) {
	s.mu.Lock()
	runs, ok := s.runs[server]
	var r *run
	var session *sdk.ClientSession
	var state, why string
	found := false
	if ok && len(runs) > 0 {
		r = runs[len(runs)-1]
		session, state, why = r.session, r.status.State, r.status.Error
		for _, t := range r.tools {
			found = found || t.Tool == tool
		}
	}
	s.mu.Unlock()
	switch {
	case r == nil:
		return nil, fmt.Errorf("%w: %s", ErrUnknownServer, server)
	case state != StateRunning:
		return nil, fmt.Errorf("%w: %s (%s)", ErrNotRunning, server, why)
	case !found:
		return nil, fmt.Errorf("%w: %s of %s", ErrUnknownTool, tool, server)
	}
	return session.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
}

// Close stops every server. The Supervisor starts nothing afterwards.
func (s *Supervisor) Close() error {
	s.mu.Lock()
	s.closed = true
	var all []*run
	for _, runs := range s.runs {
		all = append(all, runs...)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range all {
		wg.Add(1)
		go func() { defer wg.Done(); s.stop(r) }()
	}
	wg.Wait()
	return nil
}

func (s *Supervisor) env(c agent.Component) []string {
	base := s.o.BaseEnv
	if base == nil {
		base = os.Environ()
	}
	return append(append([]string(nil), base...), c.Env(s.o.ProjectDir)...)
}

func exitDescription(cmd *exec.Cmd) string {
	ps := cmd.ProcessState
	if ps == nil {
		return "did not exit"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("was killed by signal %s", ws.Signal())
	}
	return fmt.Sprintf("exited with status %d", ps.ExitCode())
}

// envLookup looks a variable up in env, last definition winning.
func envLookup(env []string) func(string) (string, bool) {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// expandVars expands ${NAME} and ${NAME:-default} as Claude Code does in
// .mcp.json; $NAME without braces and unknown names without a default are
// left as written.
func expandVars(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		expr := s[i+2 : i+j]
		name, def, hasDef := strings.Cut(expr, ":-")
		if v, ok := lookup(name); ok && (v != "" || !hasDef) {
			b.WriteString(v)
		} else if hasDef {
			b.WriteString(def)
		} else {
			b.WriteString(s[i : i+j+1])
		}
		s = s[i+j+1:]
	}
}

type headerTransport struct {
	h    http.Header
	base http.RoundTripper
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.h {
		req.Header[k] = v
	}
	return t.base.RoundTrip(req)
}

// tailBuffer keeps the last max bytes written.
type tailBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// prefixWriter prefixes each line written to w.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	mid    bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []byte
	for _, c := range b {
		if !p.mid {
			out = append(out, p.prefix...)
			p.mid = true
		}
		out = append(out, c)
		if c == '\n' {
			p.mid = false
		}
	}
	_, err := p.w.Write(out)
	return len(b), err
}
