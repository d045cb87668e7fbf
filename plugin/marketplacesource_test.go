package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseMarketplaceSource(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want MarketplaceSource
	}{
		{"github shorthand", "anthropics/claude-code", MarketplaceSource{Kind: MktGitHub, Repo: "anthropics/claude-code"}},
		{"github shorthand with ref", "corp/plugins@v1.2", MarketplaceSource{Kind: MktGitHub, Repo: "corp/plugins", Ref: "v1.2"}},
		{"github shorthand with sha", "corp/plugins@0123456789abcdef0123456789abcdef01234567", MarketplaceSource{Kind: MktGitHub, Repo: "corp/plugins", Ref: "0123456789abcdef0123456789abcdef01234567"}},
		{"github dotted names", "my.org/my_repo.js", MarketplaceSource{Kind: MktGitHub, Repo: "my.org/my_repo.js"}},
		{"https git", "https://github.com/corp/plugins.git", MarketplaceSource{Kind: MktGit, URL: "https://github.com/corp/plugins.git"}},
		{"https git with ref", "https://gitlab.com/corp/plugins#stable", MarketplaceSource{Kind: MktGit, URL: "https://gitlab.com/corp/plugins", Ref: "stable"}},
		{"ssh url", "ssh://git@example.com:2222/corp/plugins.git", MarketplaceSource{Kind: MktGit, URL: "ssh://git@example.com:2222/corp/plugins.git"}},
		{"ssh url with ref", "ssh://git@example.com/corp/plugins.git#release/2", MarketplaceSource{Kind: MktGit, URL: "ssh://git@example.com/corp/plugins.git", Ref: "release/2"}},
		{"scp-like", "git@github.com:corp/plugins.git", MarketplaceSource{Kind: MktGit, URL: "git@github.com:corp/plugins.git"}},
		{"scp-like with ref", "git@github.com:corp/plugins.git#main", MarketplaceSource{Kind: MktGit, URL: "git@github.com:corp/plugins.git", Ref: "main"}},
		{"file url", "file:///srv/git/plugins", MarketplaceSource{Kind: MktGit, URL: "file:///srv/git/plugins"}},
		{"file url with ref", "file:///srv/git/plugins#dev", MarketplaceSource{Kind: MktGit, URL: "file:///srv/git/plugins", Ref: "dev"}},
		{"http loopback git", "http://127.0.0.1:8080/repo.git", MarketplaceSource{Kind: MktGit, URL: "http://127.0.0.1:8080/repo.git"}},
		{"marketplace.json url", "https://example.com/mkt/marketplace.json", MarketplaceSource{Kind: MktURL, URL: "https://example.com/mkt/marketplace.json"}},
		{"marketplace.json on localhost", "http://localhost:9000/m.json", MarketplaceSource{Kind: MktURL, URL: "http://localhost:9000/m.json"}},
		{"relative dir", "./testdata/demo-marketplace", MarketplaceSource{Kind: MktDirectory, Path: "./testdata/demo-marketplace"}},
		{"parent dir", "../plugins", MarketplaceSource{Kind: MktDirectory, Path: "../plugins"}},
		{"dot", ".", MarketplaceSource{Kind: MktDirectory, Path: "."}},
		{"absolute dir", "/srv/marketplace", MarketplaceSource{Kind: MktDirectory, Path: "/srv/marketplace"}},
		{"home dir", "~/plugins", MarketplaceSource{Kind: MktDirectory, Path: "~/plugins"}},
		{"local file", "./mkt/.claude-plugin/marketplace.json", MarketplaceSource{Kind: MktFile, Path: "./mkt/.claude-plugin/marketplace.json"}},
		{"absolute file", "/tmp/x/catalog.JSON", MarketplaceSource{Kind: MktFile, Path: "/tmp/x/catalog.JSON"}},
		{"surrounding space", "  corp/plugins  ", MarketplaceSource{Kind: MktGitHub, Repo: "corp/plugins"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMarketplaceSource(tt.in)
			if err != nil {
				t.Fatalf("ParseMarketplaceSource(%q): %v", tt.in, err)
			}
			if !got.Equal(tt.want) {
				t.Fatalf("ParseMarketplaceSource(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			// String gives back something that parses to the same source.
			again, err := ParseMarketplaceSource(got.String())
			if err != nil || !again.Equal(got) {
				t.Fatalf("round trip via %q = %+v, %v", got.String(), again, err)
			}
			// And so does the settings JSON form.
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var back MarketplaceSource
			if err := json.Unmarshal(b, &back); err != nil || !back.Equal(got) {
				t.Fatalf("JSON round trip of %s = %+v, %v", b, back, err)
			}
		})
	}
}

func TestParseMarketplaceSourceRejects(t *testing.T) {
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
		{"port but no host", "https://:", "has no host"},
		{"json url without host", "https://:443/marketplace.json", "needs an absolute https:// URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseMarketplaceSource(tt.in)
			if err == nil {
				t.Fatalf("ParseMarketplaceSource(%q) succeeded", tt.in)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not say %q", err, tt.wantMsg)
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.Layer != LayerIntent || pe.Type != TypeSource || pe.Hint == "" {
				t.Errorf("error %#v is not an intent source-error with a hint", err)
			}
		})
	}
}

func TestMarketplaceSourceJSONSettingsForms(t *testing.T) {
	tests := []struct {
		name, in string
		want     MarketplaceSource
		out      string
	}{
		{"github", `{"source":"github","repo":"corp/plugins","ref":"main","path":"catalog"}`,
			MarketplaceSource{Kind: MktGitHub, Repo: "corp/plugins", Ref: "main", Path: "catalog"},
			`{"source":"github","repo":"corp/plugins","ref":"main","path":"catalog"}`},
		{"git", `{"url":"https://git.corp.example/p.git","source":"git"}`,
			MarketplaceSource{Kind: MktGit, URL: "https://git.corp.example/p.git"},
			`{"source":"git","url":"https://git.corp.example/p.git"}`},
		{"url with headers", `{"source":"url","url":"https://corp.example/m.json","headers":{"X-Token":"${CORP_TOKEN}","Accept":"x"}}`,
			MarketplaceSource{Kind: MktURL, URL: "https://corp.example/m.json", Headers: map[string]string{"X-Token": "${CORP_TOKEN}", "Accept": "x"}},
			`{"source":"url","url":"https://corp.example/m.json","headers":{"Accept":"x","X-Token":"${CORP_TOKEN}"}}`},
		{"directory", `{"source":"directory","path":"/srv/m"}`, MarketplaceSource{Kind: MktDirectory, Path: "/srv/m"}, `{"source":"directory","path":"/srv/m"}`},
		{"file", `{"source":"file","path":"/srv/m.json"}`, MarketplaceSource{Kind: MktFile, Path: "/srv/m.json"}, `{"source":"file","path":"/srv/m.json"}`},
		{"string form", `"corp/plugins@v2"`, MarketplaceSource{Kind: MktGitHub, Repo: "corp/plugins", Ref: "v2"}, `{"source":"github","repo":"corp/plugins","ref":"v2"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s MarketplaceSource
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
		var s MarketplaceSource
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("Unmarshal(%s) accepted %+v", bad, s)
		}
	}
}

func TestMarketplaceSourceAbs(t *testing.T) {
	s := MarketplaceSource{Kind: MktDirectory, Path: "./m"}.Abs("/work", "/home/u")
	if s.Path != "/work/m" {
		t.Errorf("Abs = %s", s.Path)
	}
	s = MarketplaceSource{Kind: MktFile, Path: "~/m.json"}.Abs("/work", "/home/u")
	if s.Path != "/home/u/m.json" {
		t.Errorf("Abs ~ = %s", s.Path)
	}
	g := MarketplaceSource{Kind: MktGitHub, Repo: "a/b"}
	if !g.Abs("/work", "/home/u").Equal(g) {
		t.Error("Abs changed a github source")
	}
}

func FuzzParseMarketplaceSource(f *testing.F) {
	for _, s := range []string{
		"owner/repo", "owner/repo@v1", "https://github.com/a/b.git#main", "ssh://git@h/a.git",
		"git@github.com:a/b.git#x", "file:///tmp/r", "./dir", "/abs/m.json", "~/x",
		"https://e.example/marketplace.json", "http://127.0.0.1:1/x.git", "a@b:c", "", "@", "#",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		src, err := ParseMarketplaceSource(in)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *Error", err)
			}
			return
		}
		if err := src.Validate(); err != nil {
			t.Fatalf("ParseMarketplaceSource(%q) = %+v which does not validate: %v", in, src, err)
		}
		b, err := json.Marshal(src)
		if err != nil {
			t.Fatal(err)
		}
		var back MarketplaceSource
		if err := json.Unmarshal(b, &back); err != nil || !back.Equal(src) {
			t.Fatalf("JSON round trip of %q: %s -> %+v, %v", in, b, back, err)
		}
	})
}

func FuzzMarketplaceSourceJSON(f *testing.F) {
	for _, s := range []string{
		`{"source":"github","repo":"a/b","ref":"main","path":"x"}`,
		`{"source":"git","url":"https://h.example/r.git"}`,
		`{"source":"url","url":"https://h.example/m.json","headers":{"A":"b"}}`,
		`{"source":"directory","path":"/m"}`, `{"source":"file","path":"/m.json"}`,
		`"owner/repo@v1"`, `{"source":"npm"}`, `null`, `[]`, `{"source":1}`,
		`{"source":"github","repo":"a/b","url":"https://h.example/x"}`, `{"source":"git","url":"git@h.example:a/b","headers":{}}`,
		`{"source":"github","repo":"a/b","ref":""}`, `{"source":"url","url":"https://h/m.json","headers":{"A":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The settings form: decode, encode, decode gives the same source.
		if d, err := DecodeMarketplaceSource(data); err == nil {
			b, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			again, err := DecodeMarketplaceSource(b)
			if err != nil || !again.Equal(d) || len(again.Headers) != len(d.Headers) {
				t.Fatalf("settings round trip %s -> %s -> %+v, %v", data, b, again, err)
			}
		} else if err.Error() == "" {
			t.Fatal("empty error message")
		}
		var s MarketplaceSource
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
		var back MarketplaceSource
		if err := json.Unmarshal(b, &back); err != nil || !back.Equal(s) {
			t.Fatalf("round trip %s -> %s -> %+v, %v", data, b, back, err)
		}
	})
}

// A settings file's source object is refused with a message that names the
// field at fault; the form is checked, not whether wharf can fetch it.
func TestDecodeMarketplaceSourceNamesTheField(t *testing.T) {
	for _, tt := range []struct{ name, in, msg string }{
		{"string", `"acme/tools"`, `must be an object like {"source":"github","repo":"owner/repo"}, not the string "acme/tools"`},
		{"array", `[]`, "want a source object, got an array"},
		{"no kind", `{"repo":"a/b"}`, `missing or non-string "source" (one of github, git, url, directory, file)`},
		{"unknown kind", `{"source":"svn","url":"x"}`, `unknown source kind "svn" (want one of github, git, url, directory, file)`},
		{"unknown field", `{"source":"github","repoo":"a/b"}`, "github source has unknown field(s) repoo (allowed: repo, ref, path)"},
		{"field of another kind", `{"source":"directory","path":"/m","url":"https://h/x"}`, "directory source has unknown field(s) url (allowed: path)"},
		{"missing required", `{"source":"git","ref":"main"}`, `git source needs "url"`},
		{"empty required", `{"source":"file","path":""}`, `file source needs a non-empty "path"`},
		{"not a string", `{"source":"github","repo":7}`, `"repo" must be a string, got a number`},
		{"headers not strings", `{"source":"url","url":"https://h/m.json","headers":{"A":1}}`, `"headers" must be an object of strings, got an object`},
		{"repo shape", `{"source":"github","repo":"a"}`, `repo "a" must be owner/repo`},
		{"url without host", `{"source":"git","url":"relative/x"}`, `url "relative/x" has no host`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeMarketplaceSource([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("DecodeMarketplaceSource(%s) = %v, want an error saying %q", tt.in, err, tt.msg)
			}
		})
	}
	// A source policy compares but wharf would not fetch is still read.
	got, err := DecodeMarketplaceSource([]byte(`{"source":"git","url":"http://git.example/x.git","ref":"../x"}`))
	if err != nil || got.URL != "http://git.example/x.git" || got.Ref != "../x" {
		t.Fatalf("lenient settings form: %+v, %v", got, err)
	}
}

// Validate and JSON decoding refuse a field the kind does not take, even on
// a source built in code, so that what is stored reads back.
func TestMarketplaceSourceFieldsPerKind(t *testing.T) {
	for _, s := range []MarketplaceSource{
		{Kind: MktGitHub, Repo: "a/b", URL: "https://h.example/x"},
		{Kind: MktGit, URL: "https://h.example/x.git", Headers: map[string]string{"A": "b"}},
		{Kind: MktGit, URL: "https://h.example/x.git", Repo: "a/b"},
	} {
		err := s.Validate()
		var pe *Error
		if !errors.As(err, &pe) || pe.Type != TypeSource || !strings.Contains(err.Error(), "source takes no") {
			t.Errorf("Validate(%+v) = %v, want a source error naming the field", s, err)
		}
	}
	var s MarketplaceSource
	err := json.Unmarshal([]byte(`{"source":"github","repo":"a/b","extra":1}`), &s)
	if err == nil || !strings.Contains(err.Error(), "unknown field(s) extra") {
		t.Errorf("Unmarshal with an unknown field = %v", err)
	}
}
