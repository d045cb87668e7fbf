package settings

import (
	"strings"
	"testing"
)

// githubHost is read from managed settings only: a user's file that sets
// it is warned about and ignored, and a value that names no host is an
// error naming the file and field.
func TestGitHubHostManagedOnly(t *testing.T) {
	s := Merge([]Document{
		{Scope: ScopeManaged, Name: "managed.json", Data: []byte(`{"githubHost": "https://ghe.corp.example"}`)},
		{Scope: ScopeUser, Name: "user.json", Data: []byte(`{"githubHost": "http://127.0.0.1:8080"}`)},
	})
	if s.GitHubHost != "https://ghe.corp.example" {
		t.Errorf("githubHost = %q, want the managed value", s.GitHubHost)
	}
	if !strings.Contains(issueStrings(s), "user.json: githubHost: only honoured in managed settings") {
		t.Errorf("githubHost in user scope not warned:\n%s", issueStrings(s))
	}
	for _, bad := range []string{`42`, `"ftp://ghe.corp.example"`, `"https://ghe.corp.example/path"`, `"https://u:p@ghe.corp.example"`} {
		s, err := Parse("managed.json", []byte(`{"githubHost": `+bad+`}`))
		if err != nil {
			t.Fatal(err)
		}
		if s.GitHubHost != "" || !strings.Contains(issueStrings(s), "managed.json:1: githubHost:") {
			t.Errorf("githubHost %s: value %q, issues:\n%s", bad, s.GitHubHost, issueStrings(s))
		}
	}
}
