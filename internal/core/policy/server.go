package policy

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wharfhq/wharf/plugin"
)

// Managed settings keys that name the policy server. An administrator who
// sets policyUrl makes every wharf on the machine enforce that server's
// bundle: neither the environment nor a flag can remove it.
const (
	KeyPolicyURL = "policyUrl" // the server's base URL
	KeyPolicyKey = "policyKey" // its bundle key: PEM, or its id "wharf-<16 hex>"
	KeyMaxAge    = "maxAge"    // how long a cached bundle holds offline: "72h", "7d"
)

// ManagedServer is a policy server named by managed settings.
type ManagedServer struct {
	URL    string
	KeyPEM []byte        // policyKey as a PEM public key
	KeyID  string        // policyKey as a key id
	MaxAge time.Duration // 0: no limit
	File   string        // the managed file that names it
	Layer  string        // the name of the managed layer that names it
}

// ManagedServers lists the policy servers the managed layers name (Layer
// Managed), in layer and document order, once per URL. A value that cannot
// be read is an error: the server it meant cannot be known, so policy fails
// closed rather than dropping it. When two documents name the same URL, the
// key pins must agree and the smaller maxAge holds.
func ManagedServers(layers []Layer) ([]ManagedServer, error) {
	var out []ManagedServer
	idx := map[string]int{}
	for _, l := range layers {
		if !l.Managed {
			continue
		}
		for _, d := range l.documents() {
			s, ok, err := serverOf(d.Name, d.Data)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			s.Layer = l.Name
			i, seen := idx[s.URL]
			if !seen {
				idx[s.URL] = len(out)
				out = append(out, s)
				continue
			}
			o := &out[i]
			if (s.KeyID != "" || s.KeyPEM != nil) && (o.KeyID != "" || o.KeyPEM != nil) && (s.KeyID != o.KeyID || string(s.KeyPEM) != string(o.KeyPEM)) {
				return nil, serverInvalid(s.File, KeyPolicyKey, fmt.Sprintf("pins another key for %s than %s does", s.URL, o.File))
			}
			if o.KeyID == "" && o.KeyPEM == nil {
				o.KeyID, o.KeyPEM = s.KeyID, s.KeyPEM
			}
			if s.MaxAge > 0 && (o.MaxAge == 0 || s.MaxAge < o.MaxAge) {
				o.MaxAge = s.MaxAge
			}
		}
	}
	return out, nil
}

func serverInvalid(file, key, what string) error {
	return plugin.Errorf(plugin.LayerPolicy, TypeLayerInvalid, file,
		"an administrator must fix "+key+" in "+file+"; until then every request is refused",
		"managed settings %s: %s %s", file, key, what)
}

// serverOf reads the server keys of one managed document.
func serverOf(file string, data []byte) (ManagedServer, bool, error) {
	var doc map[string]json.RawMessage
	if json.Unmarshal(data, &doc) != nil {
		// Not an object: the settings parser reports it and the layer
		// fails closed there.
		return ManagedServer{}, false, nil
	}
	raw, ok := doc[KeyPolicyURL]
	if !ok {
		for _, k := range []string{KeyPolicyKey, KeyMaxAge} {
			if _, set := doc[k]; set {
				return ManagedServer{}, false, serverInvalid(file, k, "is set without "+KeyPolicyURL+" in the same file")
			}
		}
		return ManagedServer{}, false, nil
	}
	s := ManagedServer{File: file}
	if json.Unmarshal(raw, &s.URL) != nil || strings.TrimSpace(s.URL) == "" {
		return s, false, serverInvalid(file, KeyPolicyURL, "must be the policy server's URL as a string, e.g. \"https://wharf.example.com\"")
	}
	s.URL = strings.TrimSpace(s.URL)
	if raw, ok := doc[KeyPolicyKey]; ok {
		var k string
		if json.Unmarshal(raw, &k) != nil || strings.TrimSpace(k) == "" {
			return s, false, serverInvalid(file, KeyPolicyKey, "must be the bundle key's PEM text or its id (wharf-<16 hex digits>, see GET /v1/policy/bundle/key)")
		}
		k = strings.TrimSpace(k)
		if strings.HasPrefix(k, "-----BEGIN") {
			pk, err := ParseBundleKey([]byte(k))
			if err != nil {
				return s, false, serverInvalid(file, KeyPolicyKey, err.Error())
			}
			s.KeyPEM = []byte(k + "\n")
			s.KeyID, _ = BundleKeyID(pk)
		} else if keyIDOK(k) {
			s.KeyID = k
		} else {
			return s, false, serverInvalid(file, KeyPolicyKey, fmt.Sprintf("%q is neither a PEM public key nor a key id (wharf-<16 hex digits>)", k))
		}
	}
	if raw, ok := doc[KeyMaxAge]; ok {
		var v string
		d, err := time.Duration(0), error(nil)
		if json.Unmarshal(raw, &v) != nil {
			err = fmt.Errorf("is not a string")
		} else {
			d, err = ParseMaxAge(v)
		}
		if err != nil {
			return s, false, serverInvalid(file, KeyMaxAge, fmt.Sprintf("%v; write a duration such as \"72h\" or \"7d\"", err))
		}
		s.MaxAge = d
	}
	return s, true, nil
}

func keyIDOK(k string) bool {
	h, ok := strings.CutPrefix(k, "wharf-")
	if !ok || len(h) != 16 {
		return false
	}
	_, err := strconv.ParseUint(h, 16, 64)
	return err == nil
}

// ParseMaxAge reads a maxAge: a Go duration ("72h", "90m") or whole days
// ("7d"); it must be positive.
func ParseMaxAge(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	var d time.Duration
	var err error
	if n, ok := strings.CutSuffix(v, "d"); ok && n != "" && !strings.ContainsAny(n, "hms") {
		var days uint64
		days, err = strconv.ParseUint(n, 10, 16)
		d = time.Duration(days) * 24 * time.Hour
	} else {
		d, err = time.ParseDuration(v)
	}
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration", v)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q is not positive", v)
	}
	return d, nil
}
