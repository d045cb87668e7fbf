package policy

import (
	"errors"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

func TestManagedServers(t *testing.T) {
	layer := func(managed bool, docs ...string) Layer {
		l := Layer{Name: "managed", Managed: managed, Settings: []byte(docs[0]), Origin: "/etc/wharf"}
		for _, d := range docs[1:] {
			l.Fragments = append(l.Fragments, settingsDoc(d))
		}
		return l
	}
	got, err := ManagedServers([]Layer{
		layer(true, `{"policyUrl": "https://p.example", "maxAge": "7d"}`, `{"policyUrl": "https://p.example", "policyKey": "wharf-0123456789abcdef", "maxAge": "36h"}`),
		layer(false, `{"policyUrl": "https://ignored.example"}`), // a --policy path cannot name one
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].URL != "https://p.example" || got[0].KeyID != "wharf-0123456789abcdef" || got[0].MaxAge != 36*time.Hour {
		t.Fatalf("servers = %+v", got)
	}
	for _, bad := range []string{
		`{"policyUrl": 42}`,
		`{"policyUrl": ""}`,
		`{"policyUrl": "https://p.example", "policyKey": "not a key"}`,
		`{"policyUrl": "https://p.example", "policyKey": "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"}`,
		`{"policyUrl": "https://p.example", "maxAge": "soon"}`,
		`{"policyUrl": "https://p.example", "maxAge": "-1h"}`,
		`{"policyUrl": "https://p.example", "maxAge": 3600}`,
		`{"maxAge": "1h"}`,
	} {
		_, err := ManagedServers([]Layer{layer(true, bad)})
		var pe *plugin.Error
		if !errors.As(err, &pe) || pe.Layer != plugin.LayerPolicy || pe.Type != TypeLayerInvalid {
			t.Errorf("%s: err = %v, want a policy-layer error (fail closed)", bad, err)
		}
	}
	// Two files pinning different keys for one server.
	if _, err := ManagedServers([]Layer{layer(true, `{"policyUrl": "https://p.example", "policyKey": "wharf-0123456789abcdef"}`,
		`{"policyUrl": "https://p.example", "policyKey": "wharf-fedcba9876543210"}`)}); err == nil {
		t.Error("conflicting pins accepted")
	}
}

func FuzzManagedServers(f *testing.F) {
	for _, s := range []string{`{}`, `{"policyUrl": "https://p.example", "policyKey": "wharf-0123456789abcdef", "maxAge": "7d"}`,
		`{"policyUrl": 1}`, `{"maxAge": "1d"}`, `[]`, `{"policyUrl": "x", "maxAge": "99999d"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		servers, err := ManagedServers([]Layer{{Name: "managed", Managed: true, Settings: []byte(doc)}})
		if err != nil {
			return
		}
		for _, s := range servers {
			if s.URL == "" || s.MaxAge < 0 {
				t.Fatalf("accepted %+v from %q", s, doc)
			}
		}
	})
}

func settingsDoc(data string) settings.Document {
	return settings.Document{Scope: settings.ScopeManaged, Name: "managed-settings.d/x.json", Data: []byte(data)}
}
