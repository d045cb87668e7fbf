package capability

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wharfhq/wharf/plugin"
)

// Set is the capability set of one plugin version. Every list is sorted
// and never nil, so its JSON is stable.
type Set struct {
	Plugin      string       `json:"plugin"`
	Hooks       []Hook       `json:"hooks"`
	MCPServers  []Server     `json:"mcpServers"`
	LSPServers  []Server     `json:"lspServers"`
	Executables []Executable `json:"executables"`
	Commands    []Prompt     `json:"commands"`
	Skills      []Prompt     `json:"skills"`
	Agents      []Prompt     `json:"agents"`
	// SensitiveConfig lists the userConfig keys marked sensitive.
	SensitiveConfig []string `json:"sensitiveConfig"`
	// DeclaredHosts is plugin.json's network.hosts; nil when the plugin
	// declares nothing.
	DeclaredHosts []string `json:"declaredHosts"`
	// Hosts lists every host the hooks and servers name.
	Hosts []Host `json:"hosts"`
}

// Hook is one hook action.
type Hook struct {
	Event   string `json:"event"`
	Matcher string `json:"matcher,omitempty"`
	// Type is command, http, prompt, agent or mcp_tool.
	Type string `json:"type"`
	// Command is the command line (command), the URL (http), the prompt
	// (prompt, agent) or "server/tool" (mcp_tool).
	Command string `json:"command"`
	// Interpreter is the program that runs the command: the first word
	// (bash, python3, node...) or, for a plugin file run directly, its
	// #! line ("exec" without one).
	Interpreter string `json:"interpreter,omitempty"`
	// Runs lists the plugin's files the command names.
	Runs []string `json:"runs"`
	// NetworkTools lists the network tools (curl, wget, nc...) the command
	// or the files it runs call.
	NetworkTools []string `json:"networkTools"`
	// DownloadAndRun is set when the command or a file it runs pipes a
	// download into an interpreter.
	DownloadAndRun bool `json:"downloadAndRun"`
	// Fetches lists packages fetched at run time (npx -y, uvx...).
	Fetches []Fetch `json:"fetches"`
	// Source is the file that defines the hook ("marketplace entry" for an
	// entry's inline object).
	Source string `json:"source"`
}

// Server is one MCP or LSP server.
type Server struct {
	Name string `json:"name"`
	// Transport is stdio, socket (LSP), http, sse or ws.
	Transport string   `json:"transport"`
	Command   string   `json:"command,omitempty"`
	Args      []string `json:"args"`
	URL       string   `json:"url,omitempty"`
	// Host is the URL's host (a remote server).
	Host string `json:"host,omitempty"`
	// Fetches lists packages fetched at run time (npx -y, uvx, docker
	// run of an image...).
	Fetches []Fetch `json:"fetches"`
	// Runs lists the plugin's files the command and args name.
	Runs   []string `json:"runs"`
	Source string   `json:"source"`
}

// Fetch is a package a hook or server fetches each time it starts.
type Fetch struct {
	// Tool is the fetcher as written: "npx -y", "npx", "bunx", "uvx",
	// "pipx run", "pnpm dlx", "yarn dlx", "uv tool run", "docker run"
	// or "podman run".
	Tool    string `json:"tool"`
	Package string `json:"package"`
	// Pinned is set when the package names an exact version (or an image
	// digest): not "latest", not a range, not absent.
	Pinned bool `json:"pinned"`
}

func (f Fetch) String() string { return f.Tool + " " + f.Package }

// Executable is a file the plugin ships that can run, and why it counts.
type Executable struct {
	Path string `json:"path"`
	// Why: "bin" (under bin/), "exec-bit", "hook" (a hook runs it),
	// "server" (a server runs it).
	Why []string `json:"why"`
}

// Prompt is a command, skill or agent and the tools it may use without
// asking (allowed-tools; an agent's tools).
type Prompt struct {
	Name         string   `json:"name"`
	Path         string   `json:"path"`
	AllowedTools []string `json:"allowedTools"`
}

// Host is a host the plugin's hooks or servers name, and whether
// network.hosts declares it.
type Host struct {
	Host     string   `json:"host"`
	Declared bool     `json:"declared"`
	From     []string `json:"from"` // "hook <event>", "mcp <name>", "lsp <name>"
}

// Report is a plugin's capability set and content findings.
type Report struct {
	Capabilities Set       `json:"capabilities"`
	Findings     []Finding `json:"findings"`
}

// Version names the rules that compute a Set and its findings from a tree.
// A cache of sets keyed by content digest (package load) keys by it too:
// raise it whenever a change of this package can change the Report of an
// unchanged tree, so that a set computed by an older wharf is computed
// again.
const Version = 2

// Bounds on what a hostile tree can make the reader do.
const (
	maxFiles    = 20000
	maxScanSize = 2 << 20 // bytes of one file scanned for findings
)

// ErrTooManyFiles is returned for a tree with more than maxFiles files.
var ErrTooManyFiles = errors.New("too many files")

// Of computes the capability set and findings of p, a plugin loaded with
// plugin.Load, reading its tree under p.Root. An error means the tree
// could not be walked; files that cannot be read are findings
// ("unreadable"), so one bad file does not hide the others.
func Of(p *plugin.Plugin) (*Report, error) {
	r := newReader(p.Root)
	defer r.text.release()
	if err := r.walk(); err != nil {
		return nil, err
	}
	r.p = p
	r.components()
	r.finish()
	return &Report{Capabilities: r.set, Findings: r.findings}, nil
}

// Read loads the plugin in dir (entry is its marketplace entry, or nil)
// and computes its report. The tree is walked and read once: the walk
// lists every directory and reads every text file, plugin.LoadTree takes
// the layout, the manifests and the Markdown from that copy instead of
// listing and reading the tree again, and the front matter it parses is
// not parsed a second time here. Of(plugin.Load(dir, entry)) computes the
// same report (a test keeps the two in step).
func Read(dir string, entry *plugin.Entry) (*Report, error) {
	r := newReader(dir)
	defer r.text.release()
	r.byPath = map[string][]byte{}
	r.dirs = map[string][]fs.DirEntry{}
	if err := r.walk(); err != nil {
		return nil, err
	}
	r.frontMatter = map[string]plugin.FrontMatter{}
	p, _, err := plugin.LoadTree(dir, entry, &plugin.Tree{Files: r.byPath, Dirs: r.dirs, FrontMatter: r.frontMatter})
	if err != nil {
		return nil, err
	}
	r.p = p
	r.components()
	r.finish()
	return &Report{Capabilities: r.set, Findings: r.findings}, nil
}

func newReader(root string) *reader {
	return &reader{root: root, cleanRoot: filepath.Clean(root) == root, execs: map[string]map[string]bool{}, hosts: map[string]map[string]bool{}, scripts: map[string][]byte{}}
}

type reader struct {
	root string
	// cleanRoot: root is clean, so WalkDir's paths under it are root +
	// separator + the relative path.
	cleanRoot bool
	p         *plugin.Plugin
	set       Set
	findings  []Finding
	execs     map[string]map[string]bool // path -> reasons
	hosts     map[string]map[string]bool // host -> from
	scripts   map[string][]byte          // text files read by walk, for hooks, servers and prompts
	md        []string                   // Markdown files, scanned in walk
	// byPath, when set, keeps what walk read by the path it read it at,
	// and dirs every directory listing walk made (by its clean path),
	// for plugin.LoadTree; frontMatter is what the loader parsed.
	byPath      map[string][]byte
	dirs        map[string][]fs.DirEntry
	frontMatter map[string]plugin.FrontMatter
	dec         []byte // decode buffer of scanEncoded
	lister      dirLister
	text        textArena
}

// walk visits every file once: it records executables and scans text for
// the findings that concern any file (Unicode in Markdown, hidden
// comments, encoded scripts), keeping script text for the hooks.
func (r *reader) walk() error {
	root := r.root
	n := 0
	var broken []string // directories whose listing failed
	defer func() {
		for _, d := range broken {
			delete(r.dirs, d)
		}
	}()
	return walkDir(root, func(abs string, d fs.DirEntry, err error) error {
		if err != nil {
			if abs == root {
				return err
			}
			if r.dirs != nil {
				broken = append(broken, filepath.Clean(abs))
			}
			rel := r.rel(abs)
			r.find(KindUnreadable, rel, 0, "cannot be read: %v", err)
			return nil
		}
		if r.dirs != nil && abs != root {
			parent := filepath.Dir(abs)
			r.dirs[parent] = append(r.dirs[parent], d)
		}
		if d.IsDir() {
			if d.Name() == ".git" && abs != root {
				return filepath.SkipDir
			}
			if r.dirs != nil {
				if c := filepath.Clean(abs); r.dirs[c] == nil {
					r.dirs[c] = []fs.DirEntry{}
				}
			}
			return nil
		}
		if n++; n > maxFiles {
			return fmt.Errorf("%s: %w (more than %d); a plugin this large is refused", root, ErrTooManyFiles, maxFiles)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel := r.rel(abs)
		if strings.HasPrefix(rel, "bin/") {
			r.exec(rel, "bin")
		}
		if textExt(rel) {
			// Open, stat and read on one descriptor: what reading the
			// file costs anyway.
			return r.readText(abs, rel)
		}
		fi, err := d.Info()
		if err != nil {
			r.find(KindUnreadable, rel, 0, "cannot be read: %v", err)
			return nil
		}
		if fi.Mode()&0o111 == 0 {
			return nil
		}
		r.exec(rel, "exec-bit")
		if fi.Size() > maxScanSize {
			return nil
		}
		return r.readText(abs, rel)
	}, r.lister.readDir)
}

// readText reads a text file, records its execute bit, scans it and keeps
// it. A file it cannot read is a finding.
func (r *reader) readText(abs, rel string) error {
	ft := readFile(abs, maxScanSize, r.text.alloc)
	if ft.openErr != nil {
		if fi, serr := os.Lstat(abs); serr == nil && fi.Mode()&0o111 != 0 {
			r.exec(rel, "exec-bit")
		}
		r.find(KindUnreadable, rel, 0, "cannot be read: %v", ft.openErr)
		return nil
	}
	if ft.statErr != nil {
		r.find(KindUnreadable, rel, 0, "cannot be read: %v", ft.statErr)
		return nil
	}
	if !ft.regular {
		return nil // replaced since the listing
	}
	if ft.exec {
		r.exec(rel, "exec-bit")
	}
	if ft.readErr != nil {
		r.find(KindUnreadable, rel, 0, "cannot be read: %v", ft.readErr)
		return nil
	}
	if !ft.read {
		return nil // larger than maxScanSize
	}
	r.scanText(rel, ft.data)
	r.scripts[rel] = ft.data
	if r.byPath != nil {
		r.byPath[abs] = ft.data
	}
	return nil
}

// exists reports whether abs exists (os.Lstat), from walk's listing of
// its directory when there is one.
func (r *reader) exists(abs string) bool {
	if ents, ok := r.dirs[filepath.Dir(abs)]; ok {
		name := filepath.Base(abs)
		i := sort.Search(len(ents), func(i int) bool { return ents[i].Name() >= name })
		return i < len(ents) && ents[i].Name() == name
	}
	_, err := os.Lstat(abs)
	return err == nil
}

func (r *reader) rel(abs string) string {
	if len(abs) > len(r.root)+1 && abs[len(r.root)] == filepath.Separator && abs[:len(r.root)] == r.root && r.cleanRoot {
		return filepath.ToSlash(abs[len(r.root)+1:]) // what WalkDir joined
	}
	rel, err := filepath.Rel(r.root, abs)
	if err != nil {
		return filepath.ToSlash(abs)
	}
	return filepath.ToSlash(rel)
}

func (r *reader) exec(rel, why string) {
	m := r.execs[rel]
	if m == nil {
		m = map[string]bool{}
		r.execs[rel] = m
	}
	m[why] = true
}

func (r *reader) host(h, from string) {
	if h == "" {
		return
	}
	m := r.hosts[h]
	if m == nil {
		m = map[string]bool{}
		r.hosts[h] = m
	}
	m[from] = true
}

// textExt reports files worth scanning by their name: Markdown, JSON,
// YAML, scripts, and files without an extension. Any executable file is
// scanned too.
func textExt(rel string) bool {
	switch strings.ToLower(path.Ext(rel)) {
	case ".md", ".markdown", ".mdx", ".txt", ".json", ".yaml", ".yml", ".toml",
		".sh", ".bash", ".zsh", ".fish", ".ps1", ".bat", ".cmd", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php", ".lua":
		return true
	}
	return path.Ext(rel) == ""
}

func isMarkdown(rel string) bool {
	switch strings.ToLower(path.Ext(rel)) {
	case ".md", ".markdown", ".mdx":
		return true
	}
	return false
}

// components reads hooks, servers, prompts and userConfig.
func (r *reader) components() {
	p := r.p
	r.set.Plugin = p.Namespace()
	seen := map[string]bool{}
	for _, c := range p.Components {
		switch c.Kind {
		case plugin.KindCommand, plugin.KindSkill, plugin.KindAgent:
			r.prompt(c)
		case plugin.KindHook, plugin.KindMCPServer, plugin.KindLSPServer:
			k := string(c.Kind) + "\x00" + c.Path
			if seen[k] {
				continue
			}
			seen[k] = true
			src := c.Path
			if src == "" {
				src = "marketplace entry"
			}
			switch cfg := p.Config(c).(type) {
			case *plugin.HooksConfig:
				r.hooks(cfg, src)
			case *plugin.MCPConfig:
				for _, n := range cfg.Names() {
					r.mcp(n, cfg.Servers[n], src)
				}
			case *plugin.LSPConfig:
				for _, n := range cfg.Names() {
					r.lsp(n, cfg.Servers[n], src)
				}
			}
		}
	}
	if opts, err := p.Manifest.UserConfigOptions(); err == nil {
		for _, o := range opts {
			if o.Sensitive {
				r.set.SensitiveConfig = append(r.set.SensitiveConfig, o.Key)
			}
		}
	}
	if n := p.Manifest.Network; n != nil {
		r.set.DeclaredHosts = append([]string{}, n.Hosts...)
		sort.Strings(r.set.DeclaredHosts)
	}
}

func (r *reader) prompt(c plugin.Component) {
	pr := Prompt{Name: r.p.Namespace() + ":" + c.Name, Path: c.Path, AllowedTools: []string{}}
	if c.Path != "" {
		data, ok := r.scripts[c.Path]
		if !ok {
			var err error
			if data, err = os.ReadFile(filepath.Join(r.p.Root, filepath.FromSlash(c.Path))); err != nil {
				data = nil
			}
		}
		// Only a header that names tools is parsed, and only when the
		// loader has not parsed it already: YAML costs more than reading
		// the file.
		if data != nil && bytes.HasPrefix(data, []byte("---")) && bytes.Contains(frontMatterHead(data), []byte("tools")) {
			var meta map[string]any
			var err error
			if fm, ok := r.frontMatter[filepath.Join(r.p.Root, filepath.FromSlash(c.Path))]; ok {
				meta, err = fm.Meta, fm.Err
			} else {
				meta, _, err = plugin.ParseFrontMatter(data)
			}
			if err == nil {
				key := "allowed-tools"
				if c.Kind == plugin.KindAgent {
					key = "tools"
				}
				pr.AllowedTools = toolList(meta[key])
			}
		}
	}
	switch c.Kind {
	case plugin.KindCommand:
		r.set.Commands = append(r.set.Commands, pr)
	case plugin.KindSkill:
		r.set.Skills = append(r.set.Skills, pr)
	case plugin.KindAgent:
		r.set.Agents = append(r.set.Agents, pr)
	}
}

// toolList reads allowed-tools: a list, or a string of tools separated by
// commas (or spaces) outside parentheses.
func toolList(v any) []string {
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	switch t := v.(type) {
	case string:
		depth, start := 0, 0
		for i, c := range t {
			switch {
			case c == '(':
				depth++
			case c == ')' && depth > 0:
				depth--
			case (c == ',' || c == ' ') && depth == 0:
				add(t[start:i])
				start = i + 1
			}
		}
		add(t[start:])
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				add(s)
			}
		}
	}
	if out == nil {
		return []string{}
	}
	sort.Strings(out)
	return dedup(out)
}

func (r *reader) hooks(cfg *plugin.HooksConfig, src string) {
	for ev, ms := range cfg.Hooks {
		for _, m := range ms {
			for _, h := range m.Hooks {
				hk := Hook{Event: string(ev), Matcher: m.Matcher, Type: h.Type, Source: src,
					Runs: []string{}, NetworkTools: []string{}, Fetches: []Fetch{}}
				from := "hook " + string(ev)
				switch h.Type {
				case "command", "":
					hk.Type = "command"
					hk.Command = h.Command
					r.analyzeHook(&hk, from)
				case "http":
					hk.Command = rawString(h.Extra["url"])
					r.host(urlHost(hk.Command), from)
				case "mcp_tool":
					hk.Command = rawString(h.Extra["server"]) + "/" + rawString(h.Extra["tool"])
				default:
					hk.Command = h.Prompt
				}
				r.set.Hooks = append(r.set.Hooks, hk)
			}
		}
	}
}

// analyzeHook fills what a command hook runs and finds download-and-run
// and credential reads in it and in the files it runs.
func (r *reader) analyzeHook(hk *Hook, from string) {
	cl := analyze(hk.Command)
	hk.Interpreter = cl.interpreter
	hk.Runs = cl.files
	hk.Fetches = cl.fetches
	tools := map[string]bool{}
	for _, t := range cl.netTools {
		tools[t] = true
	}
	for _, u := range cl.urls {
		r.host(urlHost(u), from)
	}
	line := r.lineOf(hk.Source, hk.Command)
	if cl.downloadRun {
		hk.DownloadAndRun = true
		r.find(KindDownloadAndRun, hk.Source, line, "%s hook downloads and runs code: %s", hk.Event, clip(hk.Command))
	}
	if c := credentialRead(hk.Command); c != "" {
		r.find(KindCredentialRead, hk.Source, line, "%s hook reads %s: %s", hk.Event, c, clip(hk.Command))
	}
	for _, f := range cl.files {
		r.exec(f, "hook")
		data, ok := r.scripts[f]
		if !ok {
			continue
		}
		if hk.Interpreter == "exec" {
			if sb := shebang(data); sb != "" {
				hk.Interpreter = sb
			}
		}
		for i, ln := range strings.Split(string(data), "\n") {
			lc := analyze(ln)
			for _, t := range lc.netTools {
				tools[t] = true
			}
			for _, u := range lc.urls {
				r.host(urlHost(u), from)
			}
			if lc.downloadRun {
				hk.DownloadAndRun = true
				r.find(KindDownloadAndRun, f, i+1, "run by the %s hook, downloads and runs code: %s", hk.Event, clip(ln))
			}
			if c := credentialRead(ln); c != "" {
				r.find(KindCredentialRead, f, i+1, "run by the %s hook, reads %s: %s", hk.Event, c, clip(ln))
			}
		}
	}
	hk.NetworkTools = sortedSet(tools)
}

func (r *reader) mcp(name string, s plugin.MCPServer, src string) {
	sv := Server{Name: name, Transport: s.Type, Command: s.Command, Args: append([]string{}, s.Args...), Source: src, Fetches: []Fetch{}, Runs: []string{}}
	from := "mcp " + name
	if s.IsRemote() {
		sv.URL, sv.Host = s.URL, urlHost(s.URL)
		r.host(sv.Host, from)
	} else {
		if sv.Transport == "" {
			sv.Transport = "stdio"
		}
		r.server(&sv, s.Env, from)
	}
	r.set.MCPServers = append(r.set.MCPServers, sv)
}

func (r *reader) lsp(name string, s plugin.LSPServer, src string) {
	sv := Server{Name: name, Transport: s.Transport, Command: s.Command, Args: append([]string{}, s.Args...), Source: src, Fetches: []Fetch{}, Runs: []string{}}
	if sv.Transport == "" {
		sv.Transport = "stdio"
	}
	r.server(&sv, s.Env, "lsp "+name)
	r.set.LSPServers = append(r.set.LSPServers, sv)
}

// server reads what a local server's command line runs and fetches.
func (r *reader) server(sv *Server, env map[string]string, from string) {
	words := append([]string{sv.Command}, sv.Args...)
	cl := analyzeWords(words)
	sv.Fetches, sv.Runs = cl.fetches, cl.files
	for _, f := range cl.files {
		r.exec(f, "server")
	}
	for _, u := range cl.urls {
		r.host(urlHost(u), from)
	}
	for _, k := range sortedKeys(env) {
		for _, u := range urlsIn(env[k]) {
			r.host(urlHost(u), from)
		}
	}
}

// finish sorts everything, builds executables and hosts, and adds the
// undeclared-host findings.
func (r *reader) finish() {
	s := &r.set
	for p, why := range r.execs {
		if !r.exists(filepath.Join(r.p.Root, filepath.FromSlash(p))) {
			continue // a hook names a file the plugin does not ship
		}
		s.Executables = append(s.Executables, Executable{Path: p, Why: sortedSet(why)})
	}
	for h, from := range r.hosts {
		s.Hosts = append(s.Hosts, Host{Host: h, Declared: hostDeclared(h, s.DeclaredHosts), From: sortedSet(from)})
	}
	sort.Slice(s.Hooks, func(i, j int) bool { return hookKey(s.Hooks[i]) < hookKey(s.Hooks[j]) })
	sort.Slice(s.MCPServers, func(i, j int) bool { return s.MCPServers[i].Name < s.MCPServers[j].Name })
	sort.Slice(s.LSPServers, func(i, j int) bool { return s.LSPServers[i].Name < s.LSPServers[j].Name })
	sort.Slice(s.Executables, func(i, j int) bool { return s.Executables[i].Path < s.Executables[j].Path })
	for _, l := range []*[]Prompt{&s.Commands, &s.Skills, &s.Agents} {
		sort.Slice(*l, func(i, j int) bool { return (*l)[i].Name+"\x00"+(*l)[i].Path < (*l)[j].Name+"\x00"+(*l)[j].Path })
	}
	sort.Strings(s.SensitiveConfig)
	sort.Slice(s.Hosts, func(i, j int) bool { return s.Hosts[i].Host < s.Hosts[j].Host })
	for _, h := range s.Hosts {
		if !h.Declared && s.DeclaredHosts != nil {
			r.find(KindUndeclaredHost, ".claude-plugin/plugin.json", 0, "%s is reached by %s but network.hosts does not declare it",
				h.Host, strings.Join(h.From, ", "))
		}
	}
	nonNil(&s.Hooks)
	nonNil(&s.MCPServers)
	nonNil(&s.LSPServers)
	nonNil(&s.Executables)
	nonNil(&s.Commands)
	nonNil(&s.Skills)
	nonNil(&s.Agents)
	nonNil(&s.SensitiveConfig)
	nonNil(&s.Hosts)
	sortFindings(r.findings)
	if r.findings == nil {
		r.findings = []Finding{}
	}
}

// Undeclared returns the hosts the set reaches that network.hosts does not
// declare. Without a declaration every host counts as undeclared.
func (s *Set) Undeclared() []string {
	var out []string
	for _, h := range s.Hosts {
		if !h.Declared {
			out = append(out, h.Host)
		}
	}
	return out
}

// HostMatches reports whether host h matches one of patterns, read as
// network.hosts is: an exact name, "*.d" for any name under d, and a port
// only when the pattern names one.
func HostMatches(h string, patterns []string) bool { return hostDeclared(h, patterns) }

// hostDeclared matches h against network.hosts: an exact name, "*.d"
// for any name under d, and a port only when the entry names one.
func hostDeclared(h string, declared []string) bool {
	name, port := splitHostPort(h)
	for _, d := range declared {
		dn, dp := splitHostPort(d)
		if dp != "" && dp != port {
			continue
		}
		if dn == name || (strings.HasPrefix(dn, "*.") && strings.HasSuffix(name, dn[1:])) {
			return true
		}
	}
	return false
}

func splitHostPort(h string) (string, string) {
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.Contains(h[i+1:], "]") {
		return strings.Trim(h[:i], "[]"), h[i+1:]
	}
	return strings.Trim(h, "[]"), ""
}

func hookKey(h Hook) string {
	return h.Event + "\x00" + h.Matcher + "\x00" + h.Type + "\x00" + h.Command + "\x00" + h.Source
}

// JSON is the set's stable JSON form.
func (s *Set) JSON() []byte {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // only strings, bools and slices: cannot fail
	}
	return b
}

// Digest is a short hash of the set's JSON: two versions with equal
// digests have equal capabilities.
func (s *Set) Digest() string {
	sum := sha256.Sum256(s.JSON())
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

func nonNil[T any](l *[]T) {
	if *l == nil {
		*l = []T{}
	}
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func dedup(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// rawString is a JSON string value, or "".
func rawString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// lineOf is the 1-based line of the first occurrence of s (as a JSON
// string) in the plugin file rel; 0 when it cannot be found.
func (r *reader) lineOf(rel, s string) int {
	data, ok := r.scripts[rel]
	if !ok || s == "" {
		return 0
	}
	var buf strings.Builder
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	_ = e.Encode(s)
	i := strings.Index(string(data), strings.TrimSuffix(buf.String(), "\n"))
	if i < 0 {
		return 0
	}
	return strings.Count(string(data[:i]), "\n") + 1
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}

// jsonIndent is the indented JSON that wharf prints for a report.
func jsonIndent(r *Report) ([]byte, error) { return json.MarshalIndent(r, "", "  ") }

// frontMatterHead is the front matter block of a Markdown file (up to the
// closing "---"), or the whole file when it is not closed.
func frontMatterHead(data []byte) []byte {
	if i := bytes.Index(data[3:], []byte("\n---")); i >= 0 {
		return data[:i+3]
	}
	return data
}
