package plugin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Claude Code's reading of front matter never panics; what it reads is a
// mapping with string keys, and a header it cannot read yields no fields.
func FuzzClaudeFrontMatter(f *testing.F) {
	for _, s := range []string{
		"---\nname: a\ndescription: Use this: when [x] #y\n---\nbody",
		"---\ndescription: \"x\" y\n---\n",
		"---\nd: 1\nd: 2\n---\n",
		"---\n\tmodel: y\n---\n",
		"no front matter",
		"---\nunterminated",
	} {
		f.Add([]byte(s))
	}
	addRealSeeds(f, "SKILL.md")
	f.Fuzz(func(t *testing.T, data []byte) {
		meta, _, has, perr, err := claudeFrontMatter(data)
		if err != nil || !has {
			return
		}
		if perr != nil && len(meta) != 0 {
			t.Fatalf("unreadable header kept fields: %v", meta)
		}
		_ = claudeQuote(string(data))
	})
}

// The pins file parser refuses what it does not know and never panics.
func FuzzParsePins(f *testing.F) {
	f.Add([]byte(`{"channel": "approved", "plugins": {"p": {"integrity": "w1:` + strings.Repeat("A", 43) + `="}}}`))
	f.Add([]byte(`{"plugins": {"p": {"integrity": "sha256:x"}}}`))
	f.Add([]byte(`{"plugins": {}, "extra": 1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePins(data, "wharf.json")
		if err == nil {
			for name, pin := range p.Plugins {
				if checkIntegrity(pin.Integrity) != "" {
					t.Fatalf("pin %s accepted with integrity %q", name, pin.Integrity)
				}
			}
		}
	})
}

// network.hosts never panics and keeps only valid hosts.
func FuzzNetworkHosts(f *testing.F) {
	f.Add([]byte(`{"name": "p", "network": {"hosts": ["api.example.com", "*.x.io:443", "bad host", 3]}}`))
	f.Add([]byte(`{"name": "p", "network": "all"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, _, err := ParseManifest(data, "plugin.json")
		if err != nil || m.Network == nil {
			return
		}
		for _, h := range m.Network.Hosts {
			if !ValidHost(h) {
				t.Fatalf("invalid host %q kept", h)
			}
		}
	})
}

func TestValidHost(t *testing.T) {
	for h, want := range map[string]bool{
		"api.example.com": true, "*.example.com": true, "db.example.com:5432": true, "localhost": true,
		"": false, "*.": false, "a..b": false, "-a.com": false, "a.com:0": false, "a.com:65536": false,
		"a.com:08": false, "https://a.com": false, "a b.com": false, "*.*.a.com": false,
	} {
		if got := ValidHost(h); got != want {
			t.Errorf("ValidHost(%q) = %v; want %v", h, got, want)
		}
	}
}

// A channel's pins file gives the entries their integrity; a pins file
// that does not parse, or contradicts an entry, fails the read (a
// marketplace must not lose its pins silently).
func TestPinsFile(t *testing.T) {
	w1 := "w1:" + strings.Repeat("A", 43) + "="
	other := "w1:" + strings.Repeat("B", 43) + "="
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		".claude-plugin/marketplace.json": `{"name": "ch", "owner": {"name": "w"}, "plugins": [{"name": "p", "source": "./p"}, {"name": "q", "source": "./q", "integrity": "` + other + `"}]}`,
		".claude-plugin/wharf.json":       `{"channel": "ch", "plugins": {"p": {"integrity": "` + w1 + `", "origin": "p@corp"}}}`,
	})
	m, _, err := ReadMarketplace(dir)
	if err != nil || m.Entry("p").Integrity != w1 || m.Entry("q").Integrity != other {
		t.Fatalf("ReadMarketplace = %+v, %v", m, err)
	}
	for name, body := range map[string]string{
		"bad integrity": `{"plugins": {"p": {"integrity": "sha256:x"}}}`,
		"unknown key":   `{"plugins": {}, "trust": "all"}`,
		"contradiction": `{"plugins": {"q": {"integrity": "` + w1 + `"}}}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, ".claude-plugin", PinsFileName), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		var pe *Error
		if _, _, err := ReadMarketplace(dir); !errors.As(err, &pe) || !strings.Contains(err.Error(), "wharf.json") {
			t.Errorf("%s: ReadMarketplace error = %v; want a *plugin.Error naming wharf.json", name, err)
		}
	}
}
