package settings

import (
	"errors"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// FuzzParseSource: a marketplace source as settings give it (a project's
// extraKnownMarketplaces, or a policy list entry) is refused with a
// *plugin.Error or accepted, never a panic; an accepted source keeps its
// key through its own JSON form.
func FuzzParseSource(f *testing.F) {
	for _, s := range []string{
		`{"source":"github","repo":"acme/tools"}`,
		`{"source":"github","repo":"acme/tools","ref":"v1","path":"mk"}`,
		`{"source":"git","url":"https://git.example.com/acme/tools.git"}`,
		`{"source":"url","url":"https://x/y/marketplace.json","headers":{"a":"b"}}`,
		`{"source":"directory","path":"./mk"}`,
		`{"source":"file","path":"/etc/x.json"}`,
		`{"source":"hostPattern","hostPattern":"^git\\.corp\\.example$"}`,
		`{"source":"npm","package":"@acme/mk"}`,
		`"acme/*"`, `"acme/tools"`, `{"source":"github"}`, `{"source":"github","repo":"a/b","extra":1}`, `[]`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, policy := range []bool{false, true} {
			parse := func(data []byte) (PolicySource, error) {
				s, err := plugin.DecodeMarketplaceSource(data)
				return PolicySource{MarketplaceSource: s}, err
			}
			if policy {
				parse = ParsePolicySource
			}
			s, err := parse(data)
			if err != nil {
				var pe *plugin.Error
				if errors.As(err, &pe) && pe.Err == nil {
					t.Fatalf("plugin.Error without a cause: %v", err)
				}
				if err.Error() == "" {
					t.Fatal("empty error message")
				}
				continue
			}
			key := s.Key()
			_, _, _ = s.RepoOwner(), s.Host(), s.LocalPath()
			out, err := s.MarshalJSON()
			if err != nil {
				t.Fatalf("accepted source does not encode: %v", err)
			}
			again, err := parse(out)
			if err != nil {
				t.Fatalf("own JSON %s refused: %v", out, err)
			}
			if again.Key() != key {
				t.Fatalf("key changed through JSON: %q → %q (%s)", key, again.Key(), out)
			}
		}
	})
}
