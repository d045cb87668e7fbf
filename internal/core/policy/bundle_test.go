package policy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/util"

	"github.com/wharfhq/wharf/plugin"
)

// testSigner signs bundles the way a wharf server does.
type testSigner struct {
	privPEM string
	pubPEM  []byte
	keyID   string
}

func newTestSigner(t testing.TB) *testSigner {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	id, err := BundleKeyID(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return &testSigner{
		privPEM: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		pubPEM:  pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}),
		keyID:   id,
	}
}

type testLayer struct {
	Name     string
	Rank     int
	Version  uint64
	Settings string
	Modules  map[string]string // file name -> source
}

// build writes a signed bundle. modulePaths, when set, places modules at
// arbitrary paths (for hostile bundles); revision overrides the manifest.
func (s *testSigner) build(t testing.TB, version string, revision uint64, layers []testLayer, extra map[string]string, manifestRevision string) []byte {
	t.Helper()
	type bl struct {
		Name     string          `json:"name"`
		Rank     int             `json:"rank"`
		Version  uint64          `json:"version"`
		Settings json.RawMessage `json:"settings"`
	}
	var ls []bl
	var modules []bundle.ModuleFile
	add := func(p, src string) {
		parsed, err := ast.ParseModuleWithOpts(p, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatal(err)
		}
		modules = append(modules, bundle.ModuleFile{URL: p, Path: p, Raw: []byte(src), Parsed: parsed})
	}
	for _, l := range layers {
		st := l.Settings
		if st == "" {
			st = "{}"
		}
		ls = append(ls, bl{Name: l.Name, Rank: l.Rank, Version: l.Version, Settings: json.RawMessage(st)})
		for n, src := range l.Modules {
			add(BundleModulePrefix+l.Name+"/"+n, src)
		}
	}
	for p, src := range extra {
		add(p, src)
	}
	raw, err := json.Marshal(map[string]any{"wharf": map[string]any{"policy": map[string]any{"version": version, "revision": revision, "layers": ls}}})
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]any
	if err := util.UnmarshalJSON(raw, &data); err != nil {
		t.Fatal(err)
	}
	if manifestRevision == "" {
		manifestRevision = version
	}
	b := bundle.Bundle{Manifest: bundle.Manifest{Revision: manifestRevision}, Data: data, Modules: modules}
	b.Manifest.Init()
	b.Manifest.SetRegoVersion(ast.RegoV1)
	if s != nil {
		if err := b.GenerateSignature(bundle.NewSigningConfig(s.privPEM, BundleAlgorithm, ""), s.keyID, false); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := bundle.NewWriter(&buf).DisableFormat(true).Write(b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const denyRisky = `package wharf.admin.org

deny contains msg if {
	input.plugin == "risky@corp"
	msg := "risky@corp runs arbitrary commands"
}
`

func sampleLayers() []testLayer {
	return []testLayer{
		{Name: "org", Rank: 10, Version: 3, Settings: `{"blockedMarketplaces":[{"source":"github","repo":"evil/market"}]}`, Modules: map[string]string{"risky.rego": denyRisky}},
		{Name: "team", Rank: 20, Version: 1, Settings: `{"enabledPlugins":{"lint@corp":false}}`},
	}
}

// tarEntry is one file of a rewritten archive.
type tarEntry struct {
	hdr  tar.Header
	body []byte
}

func untar(t testing.TB, b []byte) []tarEntry {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var out []tarEntry
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarEntry{hdr: *h, body: body})
	}
}

func retar(t testing.TB, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := e.hdr
		if h.Typeflag == tar.TypeReg || h.Typeflag == 0 {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if len(e.body) > 0 {
			if _, err := tw.Write(e.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func errType(err error) (plugin.Layer, string) {
	var e *plugin.Error
	if errors.As(err, &e) {
		return e.Layer, e.Type
	}
	return "", ""
}

func TestReadBundleLayersInOrderAndEnforced(t *testing.T) {
	s := newTestSigner(t)
	b := s.build(t, "sha256:abc", 7, sampleLayers(), nil, "")
	layers, info, err := ReadBundle(bytes.NewReader(b), s.pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	if info.Version != "sha256:abc" || info.Revision != 7 || info.KeyID != s.keyID {
		t.Fatalf("info = %+v", info)
	}
	if len(info.Layers) != 2 || info.Layers[0] != (BundleLayer{Name: "org", Rank: 10, Version: 3}) || info.Layers[1].Name != "team" {
		t.Fatalf("info layers = %+v", info.Layers)
	}
	if len(layers) != 2 || layers[0].Name != "org" || layers[1].Name != "team" {
		t.Fatalf("layers = %+v", layers)
	}
	if layers[0].Modules["risky.rego"] != denyRisky || len(layers[1].Modules) != 0 {
		t.Fatalf("modules = %+v / %+v", layers[0].Modules, layers[1].Modules)
	}
	e, err := NewEngine(layers)
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.Decide(context.Background(), Request{Action: ActionInstall, Plugin: plugin.MustParseID("risky@corp")})
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed || len(d.Reasons) == 0 || d.Reasons[0].Layer != "org" || !strings.Contains(d.Reasons[0].Message, "arbitrary commands") {
		t.Fatalf("risky@corp under the bundle: %+v", d)
	}
	d, err = e.Decide(context.Background(), Request{Action: ActionEnable, Plugin: plugin.MustParseID("lint@corp")})
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed || d.Reasons[0].Layer != "team" {
		t.Fatalf("lint@corp enable under the bundle: %+v", d)
	}
}

func TestReadBundleRefusesUnsignedOtherKeyTampered(t *testing.T) {
	s := newTestSigner(t)
	other := newTestSigner(t)
	good := s.build(t, "sha256:abc", 1, sampleLayers(), nil, "")

	tampered := untar(t, good)
	changed := false
	for i := range tampered {
		if strings.HasSuffix(tampered[i].hdr.Name, "risky.rego") {
			tampered[i].body = bytes.ReplaceAll(tampered[i].body, []byte(`"risky@corp"`), []byte(`"nothing@corp"`))
			changed = true
		}
	}
	if !changed {
		t.Fatal("module not found in the bundle")
	}
	// A file added after signing, and a signature file removed.
	added := append(untar(t, good), tarEntry{hdr: tar.Header{Name: "/wharf/layers/org/extra.rego", Mode: 0o644, Typeflag: tar.TypeReg},
		body: []byte("package wharf.admin.org\n")})
	var stripped []tarEntry
	for _, e := range untar(t, good) {
		if !strings.HasSuffix(e.hdr.Name, ".signatures.json") {
			stripped = append(stripped, e)
		}
	}

	cases := []struct {
		name string
		b    []byte
		key  []byte
		want string
	}{
		{"unsigned", (*testSigner)(nil).build(t, "sha256:abc", 1, sampleLayers(), nil, ""), s.pubPEM, "not signed"},
		{"signature removed", retar(t, stripped), s.pubPEM, "not signed"},
		{"signed by another key", other.build(t, "sha256:abc", 1, sampleLayers(), nil, ""), s.pubPEM, "refused"},
		{"verified with another key", good, other.pubPEM, "refused"},
		{"module altered after signing", retar(t, tampered), s.pubPEM, "refused"},
		{"file added after signing", retar(t, added), s.pubPEM, "refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ReadBundle(bytes.NewReader(c.b), c.key)
			if err == nil {
				t.Fatal("accepted")
			}
			if l, typ := errType(err); l != plugin.LayerTrust || typ != plugin.TypeTrustRejected {
				t.Fatalf("error %v: layer %q type %q, want trust/%s", err, l, typ, plugin.TypeTrustRejected)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
	if _, _, err := ReadBundle(bytes.NewReader(good), s.pubPEM); err != nil {
		t.Fatalf("the genuine bundle: %v", err)
	}
}

func TestReadBundleHostileArchives(t *testing.T) {
	s := newTestSigner(t)
	good := s.build(t, "sha256:abc", 1, sampleLayers(), nil, "")
	with := func(extra ...tarEntry) []byte { return retar(t, append(untar(t, good), extra...)) }
	reg := func(name, body string) tarEntry {
		return tarEntry{hdr: tar.Header{Name: name, Mode: 0o644, Typeflag: tar.TypeReg}, body: []byte(body)}
	}
	gz := func(raw []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(raw)
		zw.Close()
		return buf.Bytes()
	}
	var many []tarEntry
	for i := 0; i <= MaxBundleFiles; i++ {
		many = append(many, reg(fmt.Sprintf("/wharf/layers/org/m%d.rego", i), ""))
	}
	// A header claiming more content than the limit (the body is cut short).
	var huge bytes.Buffer
	{
		zw := gzip.NewWriter(&huge)
		tw := tar.NewWriter(zw)
		tw.WriteHeader(&tar.Header{Name: "/data.json", Mode: 0o644, Typeflag: tar.TypeReg, Size: MaxBundleContent + 1})
		tw.Write([]byte("{}"))
		tw.Flush()
		zw.Close()
	}
	withoutData := func() []byte {
		var out []tarEntry
		for _, e := range untar(t, good) {
			if !strings.HasSuffix(e.hdr.Name, "data.json") {
				out = append(out, e)
			}
		}
		return retar(t, out)
	}()
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "not gzip"},
		{"not gzip", []byte("hello, this is not a bundle"), "not gzip"},
		{"gzip of garbage", gz([]byte("not a tar archive at all, but long enough to fill a block? no")), "not a tar"},
		{"path traversal", with(reg("../../etc/passwd", "x")), "not a wharf bundle file"},
		{"dotdot inside", with(reg("/wharf/layers/org/../../x.rego", "x")), "not a wharf bundle file"},
		{"unknown file", with(reg("/wharf/other.json", "{}")), "not a wharf bundle file"},
		{"bad layer dir", with(reg("/wharf/layers/Org/x.rego", "x")), "not a wharf bundle file"},
		{"nested module dir", with(reg("/wharf/layers/org/sub/x.rego", "x")), "not a wharf bundle file"},
		{"symlink", with(tarEntry{hdr: tar.Header{Name: "/wharf/layers/org/l.rego", Linkname: "/etc/passwd", Typeflag: tar.TypeSymlink}}), "not a regular file"},
		{"directory", with(tarEntry{hdr: tar.Header{Name: "/wharf/", Mode: 0o755, Typeflag: tar.TypeDir}}), "not a regular file"},
		{"duplicate", with(reg("/data.json", "{}")), "twice"},
		{"too many files", retar(t, many), "more than"},
		{"content too large", huge.Bytes(), "larger than"},
		{"no data.json", withoutData, "no data.json"},
		{"manifest does not match data", s.build(t, "sha256:abc", 1, sampleLayers(), nil, "sha256:other"), "does not match"},
		{"module of an unlisted layer", s.build(t, "sha256:abc", 1, sampleLayers(), map[string]string{"/wharf/layers/ghost/g.rego": "package wharf.admin.ghost\n"}, ""), "no layer listed"},
		{"bad layer name in data", s.build(t, "sha256:abc", 1, []testLayer{{Name: "Bad-Name"}}, nil, ""), "not a layer name"},
		{"duplicate layer in data", s.build(t, "sha256:abc", 1, []testLayer{{Name: "org"}, {Name: "org"}}, nil, ""), "twice"},
		{"settings not an object", s.build(t, "sha256:abc", 1, []testLayer{{Name: "org", Settings: `[1]`}}, nil, ""), "not a JSON object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ReadBundle(bytes.NewReader(c.b), s.pubPEM)
			if err == nil {
				t.Fatal("accepted")
			}
			if l, _ := errType(err); l != plugin.LayerTrust {
				t.Fatalf("error %v: layer %q, want trust", err, l)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
	t.Run("stream too large", func(t *testing.T) {
		_, _, err := ReadBundle(io.LimitReader(zeros{}, MaxBundleBytes+10), s.pubPEM)
		if l, typ := errType(err); l != plugin.LayerTrust || typ != TypeBundleInvalid || !strings.Contains(err.Error(), "larger than") {
			t.Fatalf("err = %v (%s/%s)", err, l, typ)
		}
	})
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestReadBundleBadKey(t *testing.T) {
	s := newTestSigner(t)
	good := s.build(t, "sha256:abc", 1, nil, nil, "")
	rsaLike := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte("not der")})
	for name, key := range map[string][]byte{"empty": nil, "not pem": []byte("hello"), "not a key": rsaLike} {
		_, _, err := ReadBundle(bytes.NewReader(good), key)
		if l, typ := errType(err); l != plugin.LayerTrust || typ != plugin.TypeTrustRejected {
			t.Fatalf("%s: err %v (%s/%s)", name, err, l, typ)
		}
	}
	layers, info, err := ReadBundle(bytes.NewReader(good), s.pubPEM)
	if err != nil || len(layers) != 0 || info.Version != "sha256:abc" {
		t.Fatalf("empty policy bundle: %v %+v %+v", err, layers, info)
	}
}

// FuzzReadBundle: hostile bytes are refused with a trust error, never a
// panic; whatever is accepted verifies with the key and has valid layers.
func FuzzReadBundle(f *testing.F) {
	s := newTestSigner(f)
	good := s.build(f, "sha256:abc", 1, sampleLayers(), nil, "")
	f.Add(good)
	f.Add((*testSigner)(nil).build(f, "sha256:abc", 1, sampleLayers(), nil, ""))
	f.Add([]byte{0x1f, 0x8b, 0x08, 0x00})
	f.Add([]byte("not a bundle"))
	f.Fuzz(func(t *testing.T, b []byte) {
		layers, info, err := ReadBundle(bytes.NewReader(b), s.pubPEM)
		if err != nil {
			if l, _ := errType(err); l != plugin.LayerTrust {
				t.Fatalf("error outside the trust layer: %v", err)
			}
			return
		}
		if info.KeyID != s.keyID || len(layers) != len(info.Layers) {
			t.Fatalf("accepted %+v", info)
		}
		for _, l := range layers {
			if !layerNameRE.MatchString(l.Name) {
				t.Fatalf("accepted layer name %q", l.Name)
			}
		}
	})
}
