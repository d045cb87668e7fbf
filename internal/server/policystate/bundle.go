package policystate

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
	"sort"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/util"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/toolpin"
	"github.com/wharfhq/wharf/internal/server/approvals"
	"github.com/wharfhq/wharf/internal/server/requests"
	"github.com/wharfhq/wharf/internal/server/revocations"
	"github.com/wharfhq/wharf/internal/server/tokens"
	"github.com/wharfhq/wharf/internal/server/toolpins"
)

// The bundle's layout: data.json holds {"wharf": {"policy": {"version",
// "revision", "layers": [{"name", "rank", "version", "settings"}]},
// "revocations": [policy.Revocation...], "toolPins": [toolpin.Pin...],
// "waivers": [policy.Waiver...]}} with the layers in authority order
// (revocations, tool pins and waivers only when
// there are some), and each layer's Rego
// module is the file /wharf/layers/<layer>/<module>.rego. The manifest's
// revision is the policy version. .signatures.json is an ES256 JWS
// (policy.BundleAlgorithm) over every file's hash, made with the key kept
// in the store (SigningKeyKey), which replicas share.

// KeptBundles is how many policy revisions back stored bundles are kept
// (a lagging replica may still ask for a recent one).
const KeptBundles = 8

type signer struct {
	keyID     string
	privPEM   string
	publicPEM string
}

// KeyID names the key bundles are signed with.
func (s *State[D]) KeyID() string { return s.signer.keyID }

// PublicKeyPEM is the PEM of the public key that verifies the bundles.
func (s *State[D]) PublicKeyPEM() string { return s.signer.publicPEM }

// loadOrCreateSigner reads the signing key from the store, creating it on
// the first start. Replicas over one store share it.
func loadOrCreateSigner(st store.Store) (*signer, error) {
	var pemBytes []byte
	err := st.View(func(r store.Reader) (err error) {
		pemBytes, err = r.Get(SettingsBucket, SigningKeyKey)
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
		return nil, fmt.Errorf("bundle signing key: %w", err)
	}
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("bundle signing key in the store is not PEM; remove key " + SigningKeyKey + " from bucket " + SettingsBucket + " to create a new one")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("bundle signing key: %w", err)
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("bundle signing key is %T, want an ECDSA P-256 key", k)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&ek.PublicKey)
	if err != nil {
		return nil, err
	}
	keyID, err := policy.BundleKeyID(&ek.PublicKey)
	if err != nil {
		return nil, err
	}
	return &signer{
		keyID:     keyID,
		privPEM:   string(pemBytes),
		publicPEM: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})),
	}, nil
}

// createSigningKey stores pemBytes as the bundle signing key unless the
// store has one, and returns the key in force: two replicas starting
// together end with the same key.
func createSigningKey(st store.Store, pemBytes []byte) ([]byte, error) {
	err := store.CompareAndSwap(st, SettingsBucket, SigningKeyKey, nil, pemBytes)
	if err == nil {
		return pemBytes, nil
	}
	if !errors.Is(err, store.ErrConflict) {
		return nil, err
	}
	var cur []byte
	err = st.View(func(r store.Reader) (err error) {
		cur, err = r.Get(SettingsBucket, SigningKeyKey)
		return err
	})
	if err != nil {
		return nil, err
	}
	if bytes.Equal(cur, pemBytes) {
		return pemBytes, nil
	}
	return cur, nil
}

// Bundle is the signed bundle of one policy head.
type Bundle struct {
	Version  string
	Revision uint64
	Body     []byte // a gzipped tar
}

// Bundle returns the signed bundle of the stored policy (read from the
// store, not the cached head) as it applies to id: the organization's
// layers and the targeted layers whose target matches id (Applying), under
// the applied version (AppliedVersion; the head's version when every layer
// applies). It comes from memory when one of the same applied version and
// revision was served, else the one stored for that version, else a new
// build that it stores for every replica (unless another replica stored
// one first: then that one). Tokens that the same layers apply to get the
// same bundle.
func (s *State[D]) Bundle(ctx context.Context, id tokens.Identity) (*Bundle, error) {
	var head Head
	var layers []Layer
	var revs policy.Revocations
	var pins []toolpin.Pin
	var adm *policy.Admissions
	var ws policy.Waivers
	if err := s.st.View(func(r store.Reader) (err error) {
		if head, err = ReadHead(r); err != nil {
			return err
		}
		if layers, err = ReadLayers(r); err != nil {
			return err
		}
		recs, err := toolpins.All(r)
		if err != nil {
			return err
		}
		pins = toolpins.Pins(recs)
		if adm, err = approvals.Admissions(r); err != nil {
			return err
		}
		if ws, err = requests.InForce(r); err != nil {
			return err
		}
		revs, err = revocations.Active(r)
		return err
	}); err != nil {
		return nil, err
	}
	mine := Applying(layers, id)
	version := AppliedVersion(head.Version, layers, mine)
	s.bunMu.Lock()
	defer s.bunMu.Unlock()
	if b := s.bunCache[version]; b != nil && b.Revision == head.Revision {
		return b, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	at := Head{Version: version, Revision: head.Revision}
	body, err := s.bundleBytes(at, mine, revs, pins, adm, ws) // the same bytes on every replica
	if err != nil {
		return nil, fmt.Errorf("build policy bundle %s: %w", version, err)
	}
	s.bunBuilds.Add(1)
	b := &Bundle{Version: version, Revision: head.Revision, Body: body}
	for k, c := range s.bunCache {
		if c.Revision != head.Revision {
			delete(s.bunCache, k)
		}
	}
	if s.bunCache == nil || len(s.bunCache) >= maxCached {
		s.bunCache = map[string]*Bundle{}
	}
	s.bunCache[version] = b
	return b, nil
}

// BundleBuilds is how many times this state made a bundle ready to serve
// (built, or read from the store) rather than serve the one in memory.
func (s *State[D]) BundleBuilds() int { return int(s.bunBuilds.Load()) }

// sharedBundle is the bundle of one policy version as first built by any
// replica. ECDSA signatures are randomized, so two replicas building the
// same policy would send different bytes under one strong ETag; instead the
// first build is kept in the store, under the policy version, and every
// replica serves those bytes.
type sharedBundle struct {
	Revision uint64 `json:"revision"`
	Body     []byte `json:"body"`
}

// errStaleBundle: the stored bundle of a policy version was built under an
// older revision than the head's.
var errStaleBundle = errors.New("stored policy bundle has an older revision")

// bundleBytes returns the signed bundle for head: the stored one for head's
// version, else a new build that it stores unless another replica stored
// one first (then that one is returned).
func (s *State[D]) bundleBytes(head Head, layers []Layer, revs policy.Revocations, pins []toolpin.Pin, adm *policy.Admissions, ws policy.Waivers) ([]byte, error) {
	stored := func(r store.Reader) ([]byte, error) {
		raw, err := r.Get(BundleBucket, head.Version)
		if err != nil {
			return nil, err
		}
		var sb sharedBundle
		if err := json.Unmarshal(raw, &sb); err != nil || len(sb.Body) == 0 {
			return nil, fmt.Errorf("stored policy bundle %s is corrupt (%v); delete key %s of bucket %s to rebuild it", head.Version, err, head.Version, BundleBucket)
		}
		if sb.Revision < head.Revision {
			// The policy came back to content it had before (a layer put
			// then deleted, a revocation lifted): the stored bundle of
			// that content carries an older revision, which clients
			// refuse as a rollback. Build it again under the new one.
			return nil, errStaleBundle
		}
		return sb.Body, nil
	}
	var body []byte
	err := s.st.View(func(r store.Reader) (err error) { body, err = stored(r); return err })
	if err == nil {
		return body, nil
	}
	if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, errStaleBundle) {
		return nil, err
	}
	built, err := buildBundle(head, layers, revs, pins, adm, ws, s.signer)
	if err != nil {
		return nil, err
	}
	next, err := json.Marshal(sharedBundle{Revision: head.Revision, Body: built})
	if err != nil {
		return nil, err
	}
	err = s.st.Update(func(tx store.Tx) error {
		b, err := stored(tx)
		if err == nil {
			body = b // another replica was first
			return nil
		}
		if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, errStaleBundle) {
			return err
		}
		body = built
		kvs, err := tx.List(BundleBucket, "")
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			var sb sharedBundle
			if json.Unmarshal(kv.Value, &sb) != nil || sb.Revision+KeptBundles < head.Revision {
				if err := tx.Delete(BundleBucket, kv.Key); err != nil {
					return err
				}
			}
		}
		return tx.Put(BundleBucket, head.Version, next)
	})
	if err != nil {
		// E.g. a bundle larger than etcd's request limit: serve this
		// build (same ETag, other signature bytes) rather than nothing.
		s.opt.Logger.Warn("policy bundle not shared through the store; replicas may send different signature bytes for it",
			"version", head.Version, "bytes", len(built), "err", err)
		return built, nil
	}
	return body, nil
}

type bundleLayer struct {
	Name     string          `json:"name"`
	Rank     int             `json:"rank"`
	Version  uint64          `json:"version"`
	Settings json.RawMessage `json:"settings"`
}

func buildBundle(head Head, layers []Layer, revs policy.Revocations, pins []toolpin.Pin, adm *policy.Admissions, ws policy.Waivers, sg *signer) ([]byte, error) {
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
			p := policy.BundleModulePrefix + l.Name + "/" + n
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
	if !adm.Empty() {
		doc["admissions"] = adm // so did changing these
	}
	if len(ws) > 0 {
		doc["waivers"] = ws // so did these (requests.Version)
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
	if err := b.GenerateSignature(bundle.NewSigningConfig(sg.privPEM, policy.BundleAlgorithm, ""), sg.keyID, false); err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	var buf bytes.Buffer
	if err := bundle.NewWriter(&buf).DisableFormat(true).Write(b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
