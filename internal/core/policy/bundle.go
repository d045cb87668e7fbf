package policy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"

	"github.com/wharfhq/wharf/internal/core/lazyre"
	"github.com/wharfhq/wharf/internal/core/toolpin"
	"github.com/wharfhq/wharf/plugin"
)

// The policy bundle is what a wharf server distributes (GET
// /v1/policy/bundle): an OPA bundle (tar.gz) holding
//
//   - data.json: {"wharf": {"policy": {"version", "revision", "layers":
//     [{"name", "rank", "version", "settings"}]}, "revocations": [Revocation...],
//     "toolPins": [toolpin.Pin...], "admissions": Admissions, "waivers":
//     [Waiver...]}}, layers in authority order, revocations, tool pins,
//     admissions and waivers only when there
//     are some;
//   - /wharf/layers/<layer>/<module>.rego: each layer's admin modules;
//   - .manifest: revision = the policy version;
//   - .signatures.json: an ES256 JWS over every file's hash.
//
// ReadBundle is the one reader of that format, for the server's own checks
// and for every client.

// BundleAlgorithm is the JWS algorithm of the bundle signature.
const BundleAlgorithm = "ES256"

// BundleModulePrefix is where each layer's modules live in the bundle.
const BundleModulePrefix = "/wharf/layers/"

// Limits on a bundle read from outside. A server refuses layers that would
// exceed them (64 layers of at most 64 modules, 1 MiB per layer).
const (
	MaxBundleBytes   = 64 << 20  // the gzip stream
	MaxBundleContent = 128 << 20 // all files, uncompressed
	MaxBundleFiles   = 8192
)

// Error types of a refused bundle. Both are trust-layer errors (exit 4): a
// bundle that does not verify, or is not shaped like a wharf bundle, is never
// used.
const (
	TypeBundleInvalid = "policy-bundle-invalid"
)

// BundleLayer describes one layer of a bundle.
type BundleLayer struct {
	Name    string `json:"name"`
	Rank    int    `json:"rank"`
	Version uint64 `json:"version"`
}

// BundleInfo is what a verified bundle says about itself.
type BundleInfo struct {
	Version  string        `json:"version"`  // the policy version (sha256:...), also the manifest revision
	Revision uint64        `json:"revision"` // counts policy changes on the server
	KeyID    string        `json:"keyid"`    // the key that signed it
	Layers   []BundleLayer `json:"layers"`
	// Revocations are the plugin versions and digests withdrawn everywhere
	// (data.json: wharf.revocations); they are part of the policy version.
	Revocations Revocations `json:"revocations,omitempty"`
	// ToolPins are the approved tool definitions of plugin MCP servers
	// (data.json: wharf.toolPins); they are part of the policy version.
	ToolPins []toolpin.Pin `json:"toolPins,omitempty"`
	// Admissions are the server's approvals of plugin versions
	// (data.json: wharf.admissions); nil when it has none. They are part
	// of the policy version.
	Admissions *Admissions `json:"admissions,omitempty"`
	// Waivers are the server's approved requests (data.json:
	// wharf.waivers), attached to each of the bundle's layers; they are
	// part of the policy version.
	Waivers Waivers `json:"waivers,omitempty"`
}

// ParseBundleKey reads a PEM public key (PKIX, ECDSA P-256) as the server
// serves it at /v1/policy/bundle/key.
func ParseBundleKey(pemBytes []byte) (*ecdsa.PublicKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, plugin.Errorf(plugin.LayerTrust, plugin.TypeTrustRejected, "policy bundle key",
			"give the PEM public key of the policy server (GET /v1/policy/bundle/key)", "policy bundle key is not PEM")
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, plugin.Errorf(plugin.LayerTrust, plugin.TypeTrustRejected, "policy bundle key",
			"give the PEM public key of the policy server (GET /v1/policy/bundle/key)", "policy bundle key: %v", err)
	}
	ek, ok := k.(*ecdsa.PublicKey)
	if !ok || ek.Curve != elliptic.P256() {
		return nil, plugin.Errorf(plugin.LayerTrust, plugin.TypeTrustRejected, "policy bundle key",
			"policy bundles are signed with ECDSA P-256 (ES256) keys", "policy bundle key is %T, want an ECDSA P-256 key", k)
	}
	return ek, nil
}

// BundleKeyID names a bundle key: "wharf-" and the first 8 bytes of the
// SHA-256 of its PKIX DER, in hex.
func BundleKeyID(k *ecdsa.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return "wharf-" + hex.EncodeToString(sum[:8]), nil
}

func bundleInvalid(format string, args ...any) error {
	return plugin.Errorf(plugin.LayerTrust, TypeBundleInvalid, "policy bundle",
		"the policy bundle is damaged or not from a wharf server; pull it again from the server", format, args...)
}

var moduleFileRE = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.rego$`)

// bundlePathOK reports whether p (as written in the tar) is a file a wharf
// bundle may hold.
func bundlePathOK(p string) bool {
	rel := strings.TrimPrefix(p, "/")
	if rel == "" || path.Clean(rel) != rel || strings.HasPrefix(rel, "../") || rel == ".." {
		return false
	}
	switch rel {
	case ".manifest", ".signatures.json", "data.json":
		return true
	}
	rest, ok := strings.CutPrefix(rel, strings.TrimPrefix(BundleModulePrefix, "/"))
	if !ok {
		return false
	}
	layer, file, ok := strings.Cut(rest, "/")
	return ok && layerNameRE.MatchString(layer) && moduleFileRE.MatchString(file) && !strings.Contains(file, "..")
}

// scanBundle checks the archive's shape before any of it is parsed: only
// regular files at wharf's paths, each once, within the limits.
func scanBundle(raw []byte) error {
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return bundleInvalid("policy bundle is not gzip: %v", err)
	}
	tr := tar.NewReader(zr)
	var total int64
	seen := map[string]bool{}
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return bundleInvalid("policy bundle is not a tar archive: %v", err)
		}
		if n >= MaxBundleFiles {
			return bundleInvalid("policy bundle has more than %d files", MaxBundleFiles)
		}
		if h.Typeflag != tar.TypeReg {
			return bundleInvalid("policy bundle entry %q is not a regular file (type %q)", h.Name, h.Typeflag)
		}
		if !bundlePathOK(h.Name) {
			return bundleInvalid("policy bundle entry %q is not a wharf bundle file (.manifest, .signatures.json, data.json, %s<layer>/<name>.rego)", h.Name, BundleModulePrefix)
		}
		key := strings.TrimPrefix(h.Name, "/")
		if seen[key] {
			return bundleInvalid("policy bundle holds %q twice", h.Name)
		}
		seen[key] = true
		if h.Size < 0 || h.Size > MaxBundleContent-total {
			return bundleInvalid("policy bundle content is larger than %d MiB", MaxBundleContent>>20)
		}
		total += h.Size
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return bundleInvalid("policy bundle entry %q: %v", h.Name, err)
		}
	}
	for _, f := range []string{".manifest", ".signatures.json", "data.json"} {
		if !seen[f] {
			if f == ".signatures.json" {
				return plugin.Errorf(plugin.LayerTrust, plugin.TypeTrustRejected, "policy bundle",
					"only bundles signed by the policy server are used; pull it from the server", "policy bundle is not signed (no .signatures.json)")
			}
			return bundleInvalid("policy bundle has no %s", f)
		}
	}
	return nil
}

// ReadBundle verifies a policy bundle with the server's public key (PEM) and
// returns its layers in authority order, ready for NewEngine. A bundle that
// is unsigned, signed by another key, altered after signing, too large or
// not shaped like a wharf bundle is refused with a trust-layer error.
func ReadBundle(r io.Reader, publicKeyPEM []byte) ([]Layer, BundleInfo, error) {
	key, err := ParseBundleKey(publicKeyPEM)
	if err != nil {
		return nil, BundleInfo{}, err
	}
	keyID, err := BundleKeyID(key)
	if err != nil {
		return nil, BundleInfo{}, err
	}
	raw, err := io.ReadAll(io.LimitReader(r, MaxBundleBytes+1))
	if err != nil {
		return nil, BundleInfo{}, bundleInvalid("reading policy bundle: %v", err)
	}
	if len(raw) > MaxBundleBytes {
		return nil, BundleInfo{}, bundleInvalid("policy bundle is larger than %d MiB", MaxBundleBytes>>20)
	}
	if err := scanBundle(raw); err != nil {
		return nil, BundleInfo{}, err
	}
	der, _ := x509.MarshalPKIXPublicKey(key)
	pubPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	// The key is named in the configuration, so the kid the bundle claims
	// cannot pick another one.
	vc := bundle.NewVerificationConfig(map[string]*bundle.KeyConfig{
		keyID: {Key: pubPEM, Algorithm: BundleAlgorithm},
	}, keyID, "", nil)
	b, err := bundle.NewReader(bytes.NewReader(raw)).WithBundleVerificationConfig(vc).
		WithRegoVersion(ast.RegoV1).WithSizeLimitBytes(MaxBundleContent).Read()
	if err != nil {
		return nil, BundleInfo{}, plugin.Errorf(plugin.LayerTrust, plugin.TypeTrustRejected, "policy bundle",
			"only bundles signed by the policy server's key "+keyID+" are used; pull it again, or check the pinned key",
			"policy bundle refused: %v", err)
	}
	var doc struct {
		Wharf struct {
			Policy struct {
				Version  string `json:"version"`
				Revision uint64 `json:"revision"`
				Layers   []struct {
					BundleLayer
					Settings json.RawMessage `json:"settings"`
				} `json:"layers"`
			} `json:"policy"`
			Revocations Revocations     `json:"revocations"`
			ToolPins    []toolpin.Pin   `json:"toolPins"`
			Admissions  json.RawMessage `json:"admissions"`
			Waivers     Waivers         `json:"waivers"`
		} `json:"wharf"`
	}
	dataJSON, err := json.Marshal(b.Data)
	if err != nil {
		return nil, BundleInfo{}, bundleInvalid("policy bundle data.json: %v", err)
	}
	if err := json.Unmarshal(dataJSON, &doc); err != nil {
		return nil, BundleInfo{}, bundleInvalid("policy bundle data.json: wharf.policy: %v", err)
	}
	p := doc.Wharf.Policy
	if p.Version == "" || p.Version != b.Manifest.Revision {
		return nil, BundleInfo{}, bundleInvalid("policy bundle: manifest revision %q does not match data.json wharf.policy.version %q", b.Manifest.Revision, p.Version)
	}
	info := BundleInfo{Version: p.Version, Revision: p.Revision, KeyID: keyID, Layers: []BundleLayer{}}
	for i, r := range doc.Wharf.Revocations {
		if err := checkRevocation(r); err != nil {
			return nil, BundleInfo{}, bundleInvalid("policy bundle data.json: revocations[%d]: %v", i, err)
		}
	}
	info.Revocations = doc.Wharf.Revocations
	for i, p := range doc.Wharf.ToolPins {
		if err := p.Validate(); err != nil {
			return nil, BundleInfo{}, bundleInvalid("policy bundle data.json: toolPins[%d]: %v", i, err)
		}
		doc.Wharf.ToolPins[i].Origin = "the policy server (bundle " + info.Version + ")"
	}
	info.ToolPins = doc.Wharf.ToolPins
	if t := bytes.TrimSpace(doc.Wharf.Admissions); len(t) > 0 && string(t) != "null" {
		a, err := ParseAdmissions(t)
		if err != nil {
			return nil, BundleInfo{}, bundleInvalid("policy bundle data.json: %v", err)
		}
		info.Admissions = a
	}
	if len(doc.Wharf.Waivers) > MaxWaivers {
		return nil, BundleInfo{}, bundleInvalid("policy bundle data.json: %d waivers, more than %d", len(doc.Wharf.Waivers), MaxWaivers)
	}
	for i, w := range doc.Wharf.Waivers {
		if err := checkWaiver(w); err != nil {
			return nil, BundleInfo{}, bundleInvalid("policy bundle data.json: waivers[%d]: %v", i, err)
		}
	}
	info.Waivers = doc.Wharf.Waivers
	layers := make([]Layer, 0, len(p.Layers))
	idx := map[string]int{}
	for i, l := range p.Layers {
		if !layerNameRE.MatchString(l.Name) {
			return nil, BundleInfo{}, bundleInvalid("policy bundle data.json: layers[%d]: name %q is not a layer name", i, l.Name)
		}
		if _, dup := idx[l.Name]; dup {
			return nil, BundleInfo{}, bundleInvalid("policy bundle data.json: layer %q appears twice", l.Name)
		}
		var settings []byte
		if t := bytes.TrimSpace(l.Settings); len(t) > 0 && string(t) != "null" {
			if t[0] != '{' {
				return nil, BundleInfo{}, bundleInvalid("policy bundle data.json: layer %s: settings is not a JSON object", l.Name)
			}
			settings = append([]byte(nil), t...)
		}
		idx[l.Name] = len(layers)
		layers = append(layers, Layer{Name: l.Name, Settings: settings, Origin: "policy bundle layer " + l.Name, Waivers: info.Waivers})
		info.Layers = append(info.Layers, l.BundleLayer)
	}
	for _, m := range b.Modules {
		rest, ok := strings.CutPrefix("/"+strings.TrimPrefix(m.Path, "/"), BundleModulePrefix)
		layer, file, _ := strings.Cut(rest, "/")
		i, known := idx[layer]
		if !ok || !known {
			return nil, BundleInfo{}, bundleInvalid("policy bundle: module %s belongs to no layer listed in data.json", m.Path)
		}
		if layers[i].Modules == nil {
			layers[i].Modules = map[string]string{}
		}
		layers[i].Modules[file] = string(m.Raw)
	}
	return layers, info, nil
}

// checkRevocation checks one revocation read from a bundle: it names a
// digest, or a plugin and a version, and says why.
func checkRevocation(r Revocation) error {
	if r.ID == "" {
		return errors.New("no id")
	}
	if r.Digest == "" && (r.Plugin == "" || r.Version == "") {
		return fmt.Errorf("revocation %s names neither a digest nor a plugin and version", r.ID)
	}
	if r.Plugin != "" {
		if _, err := plugin.ParseID(r.Plugin); err != nil {
			return fmt.Errorf("revocation %s: %v", r.ID, err)
		}
	}
	if r.Digest != "" && !strings.HasPrefix(r.Digest, "w1:") {
		return fmt.Errorf("revocation %s: digest %q is not a w1: digest", r.ID, r.Digest)
	}
	return nil
}
