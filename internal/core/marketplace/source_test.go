package marketplace

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

func TestParseSource(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Source
	}{
		{"github shorthand", "anthropics/claude-code", Source{Kind: KindGitHub, Repo: "anthropics/claude-code"}},
		{"github shorthand with ref", "corp/plugins@v1.2", Source{Kind: KindGitHub, Repo: "corp/plugins", Ref: "v1.2"}},
		{"github shorthand with sha", "corp/plugins@0123456789abcdef0123456789abcdef01234567", Source{Kind: KindGitHub, Repo: "corp/plugins", Ref: "0123456789abcdef0123456789abcdef01234567"}},
		{"github dotted names", "my.org/my_repo.js", Source{Kind: KindGitHub, Repo: "my.org/my_repo.js"}},
		{"https git", "https://github.com/corp/plugins.git", Source{Kind: KindGit, URL: "https://github.com/corp/plugins.git"}},
		{"https git with ref", "https://gitlab.com/corp/plugins#stable", Source{Kind: KindGit, URL: "https://gitlab.com/corp/plugins", Ref: "stable"}},
		{"ssh url", "ssh://git@example.com:2222/corp/plugins.git", Source{Kind: KindGit, URL: "ssh://git@example.com:2222/corp/plugins.git"}},
		{"ssh url with ref", "ssh://git@example.com/corp/plugins.git#release/2", Source{Kind: KindGit, URL: "ssh://git@example.com/corp/plugins.git", Ref: "release/2"}},
		{"scp-like", "git@github.com:corp/plugins.git", Source{Kind: KindGit, URL: "git@github.com:corp/plugins.git"}},
		{"scp-like with ref", "git@github.com:corp/plugins.git#main", Source{Kind: KindGit, URL: "git@github.com:corp/plugins.git", Ref: "main"}},
		{"file url", "file:///srv/git/plugins", Source{Kind: KindGit, URL: "file:///srv/git/plugins"}},
		{"file url with ref", "file:///srv/git/plugins#dev", Source{Kind: KindGit, URL: "file:///srv/git/plugins", Ref: "dev"}},
		{"http loopback git", "http://127.0.0.1:8080/repo.git", Source{Kind: KindGit, URL: "http://127.0.0.1:8080/repo.git"}},
		{"marketplace.json url", "https://example.com/mkt/marketplace.json", Source{Kind: KindURL, URL: "https://example.com/mkt/marketplace.json"}},
		{"marketplace.json on localhost", "http://localhost:9000/m.json", Source{Kind: KindURL, URL: "http://localhost:9000/m.json"}},
		{"relative dir", "./testdata/demo-marketplace", Source{Kind: KindDirectory, Path: "./testdata/demo-marketplace"}},
		{"parent dir", "../plugins", Source{Kind: KindDirectory, Path: "../plugins"}},
		{"dot", ".", Source{Kind: KindDirectory, Path: "."}},
		{"absolute dir", "/srv/marketplace", Source{Kind: KindDirectory, Path: "/srv/marketplace"}},
		{"home dir", "~/plugins", Source{Kind: KindDirectory, Path: "~/plugins"}},
		{"local file", "./mkt/.claude-plugin/marketplace.json", Source{Kind: KindFile, Path: "./mkt/.claude-plugin/marketplace.json"}},
		{"absolute file", "/tmp/x/catalog.JSON", Source{Kind: KindFile, Path: "/tmp/x/catalog.JSON"}},
		{"surrounding space", "  corp/plugins  ", Source{Kind: KindGitHub, Repo: "corp/plugins"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSource(tt.in)
			if err != nil {
				t.Fatalf("ParseSource(%q): %v", tt.in, err)
			}
			if !got.Equal(tt.want) {
				t.Fatalf("ParseSource(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			// String gives back something that parses to the same source.
			again, err := ParseSource(got.String())
			if err != nil || !again.Equal(got) {
				t.Fatalf("round trip via %q = %+v, %v", got.String(), again, err)
			}
			// And so does the settings JSON form.
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var back Source
			if err := json.Unmarshal(b, &back); err != nil || !back.Equal(got) {
				t.Fatalf("JSON round trip of %s = %+v, %v", b, back, err)
			}
		})
	}
}

func TestParseSourceRejects(t *testing.T) {
	tests := []struct {
		name, in, wantMsg string
	}{
		{"empty", "", "empty"},
		{"bare word", "plugins", "not a marketplace source"},
		{"three segments", "a/b/c", "not a marketplace source"},
		{"empty ref", "corp/plugins@", "empty ref"},
		{"plain http remote", "http://example.com/repo.git", "plain http:// is refused"},
		{"plain http json", "http://example.com/marketplace.json", "plain http:// is refused"},
		{"ftp", "ftp://example.com/repo", "unsupported URL scheme"},
		{"bad ref", "corp/plugins@../../etc", "not a valid git ref"},
		{"ref with space", "https://h.example/r.git#a b", "not a valid git ref"},
		{"ref on json url", "https://example.com/marketplace.json#x", "takes no #ref"},
		{"newline", "corp/plugins\nrm -rf", "control character"},
		{"file url with host", "file://evil/share", "file:///absolute/path"},
		{"too long", strings.Repeat("a", 5000), "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSource(tt.in)
			if err == nil {
				t.Fatalf("ParseSource(%q) succeeded", tt.in)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not say %q", err, tt.wantMsg)
			}
			var pe *plugin.Error
			if !errors.As(err, &pe) || pe.Layer != plugin.LayerIntent || pe.Type != plugin.TypeSource || pe.Hint == "" {
				t.Errorf("error %#v is not an intent source-error with a hint", err)
			}
		})
	}
}

func TestSourceJSONSettingsForms(t *testing.T) {
	tests := []struct {
		name, in string
		want     Source
		out      string
	}{
		{"github", `{"source":"github","repo":"corp/plugins","ref":"main","path":"catalog"}`,
			Source{Kind: KindGitHub, Repo: "corp/plugins", Ref: "main", Path: "catalog"},
			`{"source":"github","repo":"corp/plugins","ref":"main","path":"catalog"}`},
		{"git", `{"url":"https://git.corp.example/p.git","source":"git"}`,
			Source{Kind: KindGit, URL: "https://git.corp.example/p.git"},
			`{"source":"git","url":"https://git.corp.example/p.git"}`},
		{"url with headers", `{"source":"url","url":"https://corp.example/m.json","headers":{"X-Token":"${CORP_TOKEN}","Accept":"x"}}`,
			Source{Kind: KindURL, URL: "https://corp.example/m.json", Headers: map[string]string{"X-Token": "${CORP_TOKEN}", "Accept": "x"}},
			`{"source":"url","url":"https://corp.example/m.json","headers":{"Accept":"x","X-Token":"${CORP_TOKEN}"}}`},
		{"directory", `{"source":"directory","path":"/srv/m"}`, Source{Kind: KindDirectory, Path: "/srv/m"}, `{"source":"directory","path":"/srv/m"}`},
		{"file", `{"source":"file","path":"/srv/m.json"}`, Source{Kind: KindFile, Path: "/srv/m.json"}, `{"source":"file","path":"/srv/m.json"}`},
		{"string form", `"corp/plugins@v2"`, Source{Kind: KindGitHub, Repo: "corp/plugins", Ref: "v2"}, `{"source":"github","repo":"corp/plugins","ref":"v2"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Source
			if err := json.Unmarshal([]byte(tt.in), &s); err != nil {
				t.Fatal(err)
			}
			if !s.Equal(tt.want) || len(s.Headers) != len(tt.want.Headers) {
				t.Fatalf("got %+v, want %+v", s, tt.want)
			}
			b, _ := json.Marshal(s)
			if string(b) != tt.out {
				t.Errorf("marshal = %s, want %s", b, tt.out)
			}
		})
	}
	for _, bad := range []string{
		`{"source":"svn","url":"x"}`,
		`{"repo":"corp/plugins"}`,
		`{"source":"github"}`,
		`{"source":"github","repo":"../x"}`,
		`{"source":"github","repo":"a/b","path":"../../etc"}`,
		`{"source":"git","url":"http://example.com/x.git"}`,
		`{"source":"url","url":"https://e.example/m.json","headers":{"Bad Header":"x"}}`,
		`{"source":"directory"}`,
		`{"source":"file","path":"/x.json","ref":"main"}`,
		`[1,2]`,
	} {
		var s Source
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("Unmarshal(%s) accepted %+v", bad, s)
		}
	}
}

func TestSourceAbs(t *testing.T) {
	s := Source{Kind: KindDirectory, Path: "./m"}.Abs("/work", "/home/u")
	if s.Path != "/work/m" {
		t.Errorf("Abs = %s", s.Path)
	}
	s = Source{Kind: KindFile, Path: "~/m.json"}.Abs("/work", "/home/u")
	if s.Path != "/home/u/m.json" {
		t.Errorf("Abs ~ = %s", s.Path)
	}
	g := Source{Kind: KindGitHub, Repo: "a/b"}
	if !g.Abs("/work", "/home/u").Equal(g) {
		t.Error("Abs changed a github source")
	}
}

func FuzzParseSource(f *testing.F) {
	for _, s := range []string{
		"owner/repo", "owner/repo@v1", "https://github.com/a/b.git#main", "ssh://git@h/a.git",
		"git@github.com:a/b.git#x", "file:///tmp/r", "./dir", "/abs/m.json", "~/x",
		"https://e.example/marketplace.json", "http://127.0.0.1:1/x.git", "a@b:c", "", "@", "#",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		src, err := ParseSource(in)
		if err != nil {
			var pe *plugin.Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *plugin.Error", err)
			}
			return
		}
		if err := src.Validate(); err != nil {
			t.Fatalf("ParseSource(%q) = %+v which does not validate: %v", in, src, err)
		}
		b, err := json.Marshal(src)
		if err != nil {
			t.Fatal(err)
		}
		var back Source
		if err := json.Unmarshal(b, &back); err != nil || !back.Equal(src) {
			t.Fatalf("JSON round trip of %q: %s -> %+v, %v", in, b, back, err)
		}
	})
}

func FuzzSourceJSON(f *testing.F) {
	for _, s := range []string{
		`{"source":"github","repo":"a/b","ref":"main","path":"x"}`,
		`{"source":"git","url":"https://h.example/r.git"}`,
		`{"source":"url","url":"https://h.example/m.json","headers":{"A":"b"}}`,
		`{"source":"directory","path":"/m"}`, `{"source":"file","path":"/m.json"}`,
		`"owner/repo@v1"`, `{"source":"npm"}`, `null`, `[]`, `{"source":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Source
		if err := json.Unmarshal(data, &s); err != nil {
			return
		}
		if s.Kind == "" && string(bytes.TrimSpace(data)) == "null" {
			return // null leaves the zero value, as encoding/json does
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("accepted %s as %+v, which does not validate: %v", data, s, err)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back Source
		if err := json.Unmarshal(b, &back); err != nil || !back.Equal(s) {
			t.Fatalf("round trip %s -> %s -> %+v, %v", data, b, back, err)
		}
	})
}
