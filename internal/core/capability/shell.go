package capability

import (
	"net"
	"net/url"
	"path"
	"strings"

	"github.com/wharfhq/wharf/internal/core/lazyre"
)

// cmdLine is what a command line (a hook command, a server's command and
// args, a line of a script) shows of what it runs.
type cmdLine struct {
	interpreter string
	files       []string // plugin files, relative to the root
	fetches     []Fetch
	netTools    []string
	urls        []string
	downloadRun bool
}

// interpreters are programs that run a script named after them.
var interpreters = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "fish": true,
	"python": true, "python3": true, "python2": true, "node": true, "deno": true, "bun": true, "ruby": true, "perl": true,
	"php": true, "lua": true, "pwsh": true, "powershell": true, "osascript": true, "uv": true, "tsx": true, "ts-node": true}

// networkTools are programs that reach the network by themselves.
var networkTools = map[string]bool{"curl": true, "wget": true, "nc": true, "ncat": true, "netcat": true, "socat": true,
	"telnet": true, "ssh": true, "scp": true, "sftp": true, "ftp": true, "rsync": true, "aria2c": true, "http": true,
	"https": true, "xh": true, "invoke-webrequest": true, "iwr": true, "invoke-restmethod": true, "irm": true}

var (
	// A download piped or substituted into an interpreter.
	downloadRunRe = lazyre.New(`(?i)(\b(curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod)\b[^|;&\n]*\|\s*(sudo\s+)?(env\s+)?(ba|z|da|k|fi)?sh\b|` +
		`\b(curl|wget)\b[^|;&\n]*\|\s*(sudo\s+)?(python[0-9.]*|perl|ruby|node|php|bun|deno|iex|pwsh|powershell)\b|` +
		`\b(ba|z|da|k)?sh\s+(-c\s+)?["']?(<\(|\$\()\s*(curl|wget)\b|` +
		`\b(source|\.)\s+<\(\s*(curl|wget)\b|` +
		`\beval\s+["']?\$\(\s*(curl|wget)\b|` +
		`\biex\s*\(?.*(downloadstring|invoke-webrequest|iwr)\b|` +
		`\b(curl|wget)\b[^;&|\n]*(-o|-O|--output)\s*\S+\s*(&&|;)\s*(sudo\s+)?(ba|z)?sh\s)`)
	urlRe = lazyre.New(`(?i)\b(https?|wss?)://[^\s"'<>()\x60\\]+`)
)

// analyze reads a command line.
func analyze(line string) cmdLine {
	cl := analyzeWords(words(line))
	cl.downloadRun = downloadRunRe.MatchString(line)
	cl.urls = urlsIn(line)
	return cl
}

// analyzeWords reads an argument vector (a server's command and args, or
// the words of a command line).
func analyzeWords(ws []string) cmdLine {
	var cl cmdLine
	files := map[string]bool{}
	tools := map[string]bool{}
	first := true
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		if f := pluginFile(w); f != "" {
			files[f] = true
		}
		for _, u := range urlsIn(w) {
			cl.urls = append(cl.urls, u)
		}
		base := strings.ToLower(path.Base(w))
		if networkTools[base] {
			tools[base] = true
		}
		if isSeparator(w) {
			first = true
			continue
		}
		if first {
			if strings.Contains(w, "=") && !strings.HasPrefix(w, "-") && !strings.Contains(w, "/") {
				continue // VAR=value before the command
			}
			if base == "env" || base == "exec" || base == "sudo" || base == "nohup" || base == "time" {
				continue
			}
			first = false
			if cl.interpreter == "" {
				switch {
				case interpreters[base]:
					cl.interpreter = base
				case pluginFile(w) != "":
					cl.interpreter = "exec"
				default:
					cl.interpreter = base
				}
			}
			if f, n := fetchAt(ws, i); f != nil {
				cl.fetches = append(cl.fetches, *f)
				i += n
			}
		}
	}
	cl.files = sortedSet(files)
	cl.netTools = sortedSet(tools)
	if cl.fetches == nil {
		cl.fetches = []Fetch{}
	}
	return cl
}

func isSeparator(w string) bool {
	switch w {
	case "|", "||", "&&", ";", "&", "(", ")", "$(", "`":
		return true
	}
	return false
}

// fetchAt reads a run-time package fetch starting at ws[i] (the program)
// and returns it with the number of words it spans after ws[i].
func fetchAt(ws []string, i int) (*Fetch, int) {
	prog := strings.ToLower(path.Base(ws[i]))
	rest := ws[i+1:]
	switch prog {
	case "npx", "bunx", "uvx":
		tool, yes := prog, false
		for j, a := range rest {
			if a == "-y" || a == "--yes" {
				yes = true
				continue
			}
			if a == "-p" || a == "--package" || a == "--from" {
				if j+1 < len(rest) {
					return &Fetch{Tool: toolName(tool, yes), Package: rest[j+1], Pinned: pinned(rest[j+1])}, j + 2
				}
				continue
			}
			if strings.HasPrefix(a, "--package=") || strings.HasPrefix(a, "--from=") {
				v := a[strings.IndexByte(a, '=')+1:]
				return &Fetch{Tool: toolName(tool, yes), Package: v, Pinned: pinned(v)}, j + 1
			}
			if strings.HasPrefix(a, "-") {
				continue
			}
			return &Fetch{Tool: toolName(tool, yes), Package: a, Pinned: pinned(a)}, j + 1
		}
	case "pipx", "pnpm", "yarn", "uv", "docker", "podman":
		sub := map[string]string{"pipx": "run", "pnpm": "dlx", "yarn": "dlx", "uv": "tool", "docker": "run", "podman": "run"}[prog]
		if len(rest) == 0 || rest[0] != sub {
			return nil, 0
		}
		tool := prog + " " + sub
		skip := 1
		if prog == "uv" {
			if len(rest) < 2 || rest[1] != "run" {
				return nil, 0
			}
			tool, skip = "uv tool run", 2
		}
		valued := map[string]bool{"-e": true, "--env": true, "-v": true, "--volume": true, "--name": true, "--network": true,
			"--net": true, "-p": true, "--publish": true, "-w": true, "--workdir": true, "-u": true, "--user": true, "--entrypoint": true,
			"--mount": true, "-l": true, "--label": true, "--env-file": true, "--platform": true, "--spec": true, "--python": true,
			"--from": true, "--with": true, "--pull": true, "-h": true, "--hostname": true, "--add-host": true, "--cap-add": true}
		for j := skip; j < len(rest); j++ {
			a := rest[j]
			if valued[a] {
				j++
				continue
			}
			if strings.HasPrefix(a, "-") {
				continue
			}
			return &Fetch{Tool: tool, Package: a, Pinned: pinned(a)}, j + 1
		}
	}
	return nil, 0
}

func toolName(tool string, yes bool) string {
	if yes {
		return tool + " -y"
	}
	return tool
}

// pinned reports whether a package or image names an exact version:
// name@1.2.3, name==1.2.3, image@sha256:..., image:1.2.3 (not latest).
func pinned(pkg string) bool {
	if strings.Contains(pkg, "@sha256:") {
		return true
	}
	if i := strings.Index(pkg, "=="); i > 0 {
		return exactVersion(pkg[i+2:])
	}
	if i := strings.LastIndexByte(pkg, '@'); i > 0 {
		return exactVersion(pkg[i+1:])
	}
	if i := strings.LastIndexByte(pkg, ':'); i > 0 && !strings.Contains(pkg[i:], "/") {
		return exactVersion(pkg[i+1:])
	}
	return false
}

func exactVersion(v string) bool {
	if v == "" || v == "latest" || v == "next" || strings.ContainsAny(v, "^~*<>x| ") {
		return false
	}
	return v[0] >= '0' && v[0] <= '9' || v[0] == 'v' && len(v) > 1 && v[1] >= '0' && v[1] <= '9'
}

// pluginRootVars are the spellings of the plugin's root in a command.
var pluginRootVars = []string{"${CLAUDE_PLUGIN_ROOT}/", "$CLAUDE_PLUGIN_ROOT/", "${WHARF_PLUGIN_ROOT}/", "$WHARF_PLUGIN_ROOT/"}

// pluginFile returns the plugin-relative path a word names through the
// plugin root variable, or "".
func pluginFile(w string) string {
	for _, v := range pluginRootVars {
		if i := strings.Index(w, v); i >= 0 {
			rest := w[i+len(v):]
			if j := strings.IndexAny(rest, " \"';|&)`$"); j >= 0 {
				rest = rest[:j]
			}
			rest = path.Clean(rest)
			if rest == "." || strings.HasPrefix(rest, "..") || rest == "" {
				return ""
			}
			return rest
		}
	}
	return ""
}

// words splits a command line into shell words: quotes are removed,
// operators are words of their own. It reads, it does not run: anything
// it does not understand stays in the word.
func words(line string) []string {
	var out []string
	var cur strings.Builder
	in := false
	flush := func() {
		if in {
			out = append(out, cur.String())
			cur.Reset()
			in = false
		}
	}
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t' || c == '\n':
			flush()
		case c == '|' || c == ';' || c == '&':
			flush()
			op := string(c)
			if i+1 < len(line) && (line[i+1] == '|' || line[i+1] == '&') && c != ';' {
				op += string(line[i+1])
				i++
			}
			out = append(out, op)
		case c == '(' || c == ')' || c == '`':
			flush()
			out = append(out, string(c))
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	flush()
	return out
}

func urlsIn(s string) []string {
	if !strings.Contains(s, "://") {
		return nil
	}
	return urlRe.Regexp().FindAllString(s, -1)
}

// urlHost is the host of a URL, lower-cased, with its port when not the
// scheme's default; "" when none can be read (a host built from a
// variable, a local address).
func urlHost(raw string) string {
	raw = strings.TrimRight(raw, ".,;:")
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	h := strings.ToLower(u.Hostname())
	if h == "" || strings.ContainsAny(h, "${}") {
		return ""
	}
	port := u.Port()
	def := map[string]string{"http": "80", "https": "443", "ws": "80", "wss": "443"}[strings.ToLower(u.Scheme)]
	if port != "" && port != def {
		return net.JoinHostPort(h, port)
	}
	return h
}

// shebang is the interpreter a #! line names ("env X" gives X).
func shebang(data []byte) string {
	if len(data) < 3 || data[0] != '#' || data[1] != '!' {
		return ""
	}
	line := string(data[2:])
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	f := strings.Fields(line)
	if len(f) == 0 {
		return ""
	}
	prog := path.Base(f[0])
	if prog == "env" {
		for _, a := range f[1:] {
			if !strings.HasPrefix(a, "-") {
				return path.Base(a)
			}
		}
	}
	return prog
}

// credentialFiles are files and stores a hook has no business reading.
var credentialFiles = []struct{ needle, name string }{
	{".ssh/", "~/.ssh"}, {".ssh\"", "~/.ssh"}, {"id_rsa", "an SSH private key"}, {"id_ed25519", "an SSH private key"},
	{".aws/credentials", "~/.aws/credentials"}, {".netrc", "~/.netrc"}, {".npmrc", "~/.npmrc"}, {".pypirc", "~/.pypirc"},
	{".git-credentials", "~/.git-credentials"}, {".docker/config.json", "~/.docker/config.json"}, {".kube/config", "~/.kube/config"},
	{".config/gh/hosts.yml", "the GitHub CLI's tokens"}, {".config/gcloud", "gcloud credentials"}, {".azure/", "Azure credentials"},
	{"login.keychain", "the login keychain"}, {"library/keychains", "the keychains"}, {"find-generic-password", "the keychain"},
	{"find-internet-password", "the keychain"}, {"secret-tool lookup", "the secret service"}, {".gnupg/", "the GnuPG keyring"},
}

// credentialRead names the credential store line reads, or "".
func credentialRead(line string) string {
	l := strings.ToLower(line)
	for _, c := range credentialFiles {
		if strings.Contains(l, c.needle) {
			return c.name
		}
	}
	for i := strings.Index(l, ".ssh"); i >= 0; {
		end := i + len(".ssh")
		if (i == 0 || l[i-1] == '/' || l[i-1] == '~' || l[i-1] == '"' || l[i-1] == ' ') && (end == len(l) || !isWordByte(l[end])) {
			return "~/.ssh"
		}
		j := strings.Index(l[end:], ".ssh")
		if j < 0 {
			break
		}
		i = end + j
	}
	return ""
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
