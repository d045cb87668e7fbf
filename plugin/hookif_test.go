package plugin

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseHookIf(t *testing.T) {
	for _, c := range []struct {
		rule, tool, pat, err string
	}{
		{rule: "Bash", tool: "Bash"},
		{rule: " Bash(git *) ", tool: "Bash", pat: "git *"},
		{rule: "Edit(*.ts)", tool: "Edit", pat: "*.ts"},
		{rule: "mcp__memory__create", tool: "mcp__memory__create"},
		{rule: "", err: "empty permission rule"},
		{rule: "Bash(git *", err: "without closing"},
		{rule: "Ba sh", err: "not a tool name"},
		{rule: "(x)", err: "not a tool name"},
		{rule: "Bash()", err: "empty pattern"},
	} {
		r, err := ParseHookIf(c.rule)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseHookIf(%q) = %v, want error with %q", c.rule, err, c.err)
			}
			continue
		}
		if err != nil || r.Tool != c.tool || r.Pattern != c.pat || r.HasPattern != (c.pat != "") {
			t.Errorf("ParseHookIf(%q) = %+v, %v", c.rule, r, err)
		}
	}
}

func TestHookIfMatch(t *testing.T) {
	const dir, home = "/work/proj", "/home/u"
	for _, c := range []struct {
		rule, tool, input string
		want              bool
	}{
		{"Bash", "Bash", `{"command":"ls"}`, true},
		{"Bash", "Edit", `{"file_path":"/a"}`, false},
		{"Bash(git *)", "Bash", `{"command":"git push origin main"}`, true},
		{"Bash(git *)", "Bash", `{"command":"git"}`, true},
		{"Bash(git *)", "Bash", `{"command":"gitk"}`, false},
		{"Bash(git *)", "Bash", `{"command":"echo git x"}`, false},
		{"Bash(npm run test:*)", "Bash", `{"command":"npm run test --watch"}`, true},
		{"Bash(npm run test:*)", "Bash", `{"command":"npm run testing"}`, false},
		{"Bash(*)", "Bash", `{}`, true},
		{"Edit(*.ts)", "Edit", `{"file_path":"/work/proj/src/a.ts"}`, true},
		{"Edit(*.ts)", "Edit", `{"file_path":"/work/proj/src/a.tsx"}`, false},
		{"Edit(*.ts)", "Write", `{"file_path":"/work/proj/a.ts"}`, false},
		{"Write(src/**)", "Write", `{"file_path":"/work/proj/src/x/y.go"}`, true},
		{"Write(src/*)", "Write", `{"file_path":"/work/proj/src/x/y.go"}`, false},
		{"Write(src/**/*.go)", "Write", `{"file_path":"src/y.go"}`, true},
		{"Read(//etc/**)", "Read", `{"file_path":"/etc/passwd"}`, true},
		{"Read(~/.ssh/*)", "Read", `{"file_path":"/home/u/.ssh/id_rsa"}`, true},
		{"Read(~/.ssh/*)", "Read", `{"file_path":"/work/proj/.ssh/id_rsa"}`, false},
		{"Read(.env)", "Read", `{"file_path":"/work/proj/sub/.env"}`, true},
		{"Read(.env)", "Read", `{}`, false},
		{"NotebookEdit(*.ipynb)", "NotebookEdit", `{"notebook_path":"/n/a.ipynb"}`, true},
		{"WebFetch(domain:example.com)", "WebFetch", `{"url":"https://example.com/x"}`, true},
		{"WebFetch(domain:example.com)", "WebFetch", `{"url":"https://evil.com/example.com"}`, false},
		{"WebFetch(domain:*.example.com)", "WebFetch", `{"url":"https://api.example.com/"}`, true},
		{"WebFetch(https://docs.*)", "WebFetch", `{"url":"https://docs.rs/x"}`, true},
		// Unsupported patterns match by tool name alone (the loader warns).
		{"Skill(deploy)", "Skill", `{"skill":"other"}`, true},
		{"Bash(git *)", "Bash", `not json`, false},
	} {
		r, err := ParseHookIf(c.rule)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Match(c.tool, json.RawMessage(c.input), dir, home); got != c.want {
			t.Errorf("%s on %s %s = %v, want %v", c.rule, c.tool, c.input, got, c.want)
		}
	}
	if r, _ := ParseHookIf("Skill(deploy)"); r.Supported() == nil {
		t.Error("Skill(deploy) reported as supported")
	}
	if !IfEvaluated(HookPreToolUse) || IfEvaluated(HookStop) {
		t.Error("IfEvaluated")
	}
}

func FuzzHookIf(f *testing.F) {
	for _, s := range []string{"Bash", "Bash(git *)", "Edit(**/*.ts)", "Read(~/.ssh/*)", "WebFetch(domain:*.x.com)", "Bash(npm:*)", "(", "Edit(\xff*)"} {
		f.Add(s, `{"command":"git x","file_path":"/a/b.ts","url":"https://a.x.com"}`)
	}
	f.Fuzz(func(t *testing.T, rule, input string) {
		r, err := ParseHookIf(rule)
		if err != nil {
			return
		}
		for _, tool := range []string{"Bash", "Edit", "Read", "WebFetch", r.Tool} {
			r.Match(tool, json.RawMessage(input), "/p", "/h")
		}
	})
}
