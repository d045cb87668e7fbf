package api

import (
	"bytes"
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
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/util"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/toolpin"
)

// BundleAlgorithm is the JWS algorithm of the bundle signature.
const BundleAlgorithm = policy.BundleAlgorithm

// The bundle's layout: data.json holds {"wharf": {"policy": {"version",
// "revision", "layers": [{"name", "rank", "version", "settings"}]},
// "revocations": [policy.Revocation...]}} with the layers in authority
// order (revocations only when there are some), and each layer's Rego module is the file
// /wharf/layers/<layer>/<module>.rego. The manifest's revision is the policy
// version. .signatures.json is an ES256 JWS over every file's hash, made
// with the server's key (GET /v1/policy/bundle/key).
const bundleModulePrefix = policy.BundleModulePrefix

type bundleSigner struct {
	keyID     string
	privPEM   string
	publicPEM string
}

// loadOrCreateSigner reads the signing key from the store, creating it on
// the first start. Replicas over one store share it.
func loadOrCreateSigner(st store.Store) (*bundleSigner, error) {
	var pemBytes []byte
	err := st.View(func(r store.Reader) (err error) {
		pemBytes, err = r.Get(bucketSettings, keySigningKey)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		var k *ecdsa.PrivateKey
		var der []byte
		if k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err == nil {
			if der, err = x509.MarshalPKCS8PrivateKey(k); err == nil {
				// Compare-and-swap from "absent": replicas starting together agree on one key.
				pemBytes, err = createSigningKey(st, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("api: bundle signing key: %w", err)
	}
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("api: bundle signing key in the store is not PEM; remove key " + keySigningKey + " from bucket " + bucketSettings + " to create a new one")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("api: bundle signing key: %w", err)
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("api: bundle signing key is %T, want an ECDSA P-256 key", k)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&ek.PublicKey)
	if err != nil {
		return nil, err
	}
	keyID, err := policy.BundleKeyID(&ek.PublicKey)
	if err != nil {
		return nil, err
	}
	return &bundleSigner{
		keyID:     keyID,
		privPEM:   string(pemBytes),
		publicPEM: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})),
	}, nil
}

// BundleKey is GET /v1/policy/bundle/key: what an agent needs to verify the
// bundle signature.
type BundleKey struct {
	KeyID     string `json:"keyid"`
	Algorithm string `json:"algorithm"`
	PublicKey string `json:"publicKey"` // PEM
}

func (s *Server) bundleKey(c echo.Context) error {
	return c.JSON(http.StatusOK, BundleKey{KeyID: s.signer.keyID, Algorithm: BundleAlgorithm, PublicKey: s.signer.publicPEM})
}

// bundleETag is a strong ETag derived from the policy version only, so it is
// the same on every replica for the same policy.
func bundleETag(version string) string {
	return `"` + strings.TrimPrefix(version, "sha256:") + `"`
}

// etagMatches implements If-None-Match for GET (weak comparison, lists, *).
func etagMatches(header, etag string) bool {
	for header != "" {
		var part string
		part, header, _ = strings.Cut(header, ",")
		p := strings.TrimSpace(part)
		if p == "*" || strings.TrimPrefix(p, "W/") == etag {
			return true
		}
	}
	return false
}

// bundleTag is the ETag of one policy version, with header values made
// once: a poll that gets a 304 allocates nothing for them.
type bundleTag struct {
	version string
	etag    string
	etagHdr []string // {etag}
}

// noCache is the Cache-Control value of the bundle.
var noCache = []string{"no-cache"}

// bundleTag returns the ETag of version.
func (s *Server) bundleTag(version string) *bundleTag {
	if t := s.etag.Load(); t != nil && t.version == version {
		return t
	}
	etag := bundleETag(version)
	t := &bundleTag{version: version, etag: etag, etagHdr: []string{etag}}
	s.etag.Store(t)
	return t
}

type builtBundle struct {
	version  string
	revision uint64
	body     []byte
}

// policyBundle serves the signed bundle. The 304 path reads one key and
// builds nothing.
func (s *Server) policyBundle(c echo.Context) error {
	now := time.Now()
	if r, ok := c.(*request); ok {
		now = r.start
	}
	head, err := s.currentHeadAt(now)
	if err != nil {
		return err
	}
	tag := s.bundleTag(head.Version)
	// The values are shared, read-only slices (len = cap, so an Add copies).
	hdr := c.Response().Header()
	hdr["Etag"] = tag.etagHdr
	hdr["Cache-Control"] = noCache
	if etagMatches(c.Request().Header.Get("If-None-Match"), tag.etag) {
		return c.NoContent(http.StatusNotModified)
	}
	b, err := s.bundleFor(c.Request().Context())
	if err != nil {
		return err
	}
	// The store may have moved on between the two reads (the head above
	// can lag the store by a watch event): the ETag must name the bundle
	// actually sent, and a client that already holds it gets 304 — the one
	// it got from another replica, or from this one a moment ago.
	etag := bundleETag(b.version)
	hdr.Set("ETag", etag)
	if etagMatches(c.Request().Header.Get("If-None-Match"), etag) {
		return c.NoContent(http.StatusNotModified)
	}
	hdr.Set("X-Wharf-Policy-Version", b.version)
	return c.Blob(http.StatusOK, "application/gzip", b.body)
}

func (s *Server) bundleFor(ctx context.Context) (*builtBundle, error) {
	var head policyHead
	var layers []Layer
	var revs policy.Revocations
	var pins []toolpin.Pin
	if err := s.deps.Store.View(func(r store.Reader) (err error) {
		if head, err = readHead(r); err != nil {
			return err
		}
		if layers, err = readLayers(r); err != nil {
			return err
		}
		if pins, err = bundleToolPins(r); err != nil {
			return err
		}
		revs, err = readRevocations(r)
		return err
	}); err != nil {
		return nil, err
	}
	s.bunMu.Lock()
	defer s.bunMu.Unlock()
	if s.bunCache != nil && s.bunCache.version == head.Version && s.bunCache.revision == head.Revision {
		return s.bunCache, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	body, err := s.bundleBytes(head, layers, revs, pins) // the same bytes on every replica (replica.go)
	if err != nil {
		return nil, fmt.Errorf("build policy bundle %s: %w", head.Version, err)
	}
	s.bunBuilds++
	s.bunCache = &builtBundle{version: head.Version, revision: head.Revision, body: body}
	return s.bunCache, nil
}

type bundleLayer struct {
	Name     string          `json:"name"`
	Rank     int             `json:"rank"`
	Version  uint64          `json:"version"`
	Settings json.RawMessage `json:"settings"`
}

func buildBundle(head policyHead, layers []Layer, revs policy.Revocations, pins []toolpin.Pin, sg *bundleSigner) ([]byte, error) {
	bl := make([]bundleLayer, len(layers))
	var modules []bundle.ModuleFile
	for i, l := range layers {
		bl[i] = bundleLayer{Name: l.Name, Rank: l.Rank, Version: l.Version, Settings: l.Settings}
		names := make([]string, 0, len(l.Modules))
		for n := range l.Modules {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			p := bundleModulePrefix + l.Name + "/" + n
			parsed, err := ast.ParseModuleWithOpts(p, l.Modules[n], ast.ParserOptions{RegoVersion: ast.RegoV1})
			if err != nil {
				return nil, fmt.Errorf("layer %s module %s: %w", l.Name, n, err)
			}
			modules = append(modules, bundle.ModuleFile{URL: p, Path: p, Raw: []byte(l.Modules[n]), Parsed: parsed})
		}
	}
	doc := map[string]any{"policy": map[string]any{
		"version": head.Version, "revision": head.Revision, "layers": bl,
	}}
	if len(revs) > 0 {
		doc["revocations"] = revs // changing them changed head.Version
	}
	if len(pins) > 0 {
		doc["toolPins"] = pins // changing them changed head.Version
	}
	raw, err := json.Marshal(map[string]any{"wharf": doc})
	if err != nil {
		return nil, err
	}
	// The data is hashed for the signature as generic JSON values, exactly
	// as a reader will see it.
	var data map[string]any
	if err := util.UnmarshalJSON(raw, &data); err != nil {
		return nil, err
	}
	b := bundle.Bundle{
		Manifest: bundle.Manifest{Revision: head.Version},
		Data:     data,
		Modules:  modules,
	}
	b.Manifest.Init()
	b.Manifest.SetRegoVersion(ast.RegoV1)
	if err := b.GenerateSignature(bundle.NewSigningConfig(sg.privPEM, BundleAlgorithm, ""), sg.keyID, false); err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	var buf bytes.Buffer
	if err := bundle.NewWriter(&buf).DisableFormat(true).Write(b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// BundlePolicy is a verified bundle's content.
type BundlePolicy struct {
	Version     string
	Revision    uint64
	Layers      []PolicyLayer
	Revocations policy.Revocations
	ToolPins    []toolpin.Pin
}

// ReadBundle verifies a policy bundle's signature with the server's public
// key and returns its layers in authority order, ready for a policy engine.
// A bundle that is unsigned, signed by another key or altered after signing
// is refused. The format and its checks are policy.ReadBundle's.
func ReadBundle(r io.Reader, key BundleKey) (BundlePolicy, error) {
	if key.Algorithm != "" && key.Algorithm != BundleAlgorithm {
		return BundlePolicy{}, fmt.Errorf("policy bundle: key algorithm %q, want %s", key.Algorithm, BundleAlgorithm)
	}
	layers, info, err := policy.ReadBundle(r, []byte(key.PublicKey))
	if err != nil {
		return BundlePolicy{}, err
	}
	out := BundlePolicy{Version: info.Version, Revision: info.Revision, Revocations: info.Revocations, ToolPins: info.ToolPins}
	for _, l := range layers {
		m := l.Modules
		if m == nil {
			m = map[string]string{}
		}
		out.Layers = append(out.Layers, PolicyLayer{Name: l.Name, Settings: l.Settings, Modules: m})
	}
	return out, nil
}

// BundleKeyID names the key this server signs policy bundles with.
func (s *Server) BundleKeyID() string { return s.signer.keyID }
