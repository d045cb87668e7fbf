package api

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/toolpin"
)

// BundleAlgorithm is the JWS algorithm of the bundle signature.
const BundleAlgorithm = policy.BundleAlgorithm

// The bundle's layout and signature are policystate's (bundle.go there).

// BundleKey is GET /v1/policy/bundle/key: what an agent needs to verify the
// bundle signature.
type BundleKey struct {
	KeyID     string `json:"keyid"`
	Algorithm string `json:"algorithm"`
	PublicKey string `json:"publicKey"` // PEM
}

func (s *Server) bundleKey(c echo.Context) error {
	return c.JSON(http.StatusOK, BundleKey{KeyID: s.pol.KeyID(), Algorithm: BundleAlgorithm, PublicKey: s.pol.PublicKeyPEM()})
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

// policyBundle serves the signed bundle of the policy that applies to the
// caller's token: the organization's layers and the layers targeted to
// its groups or labels (policystate.State.Bundle). Its ETag is the applied
// version, so tokens with the same layers share it. The 304 path reads
// one key and builds nothing.
func (s *Server) policyBundle(c echo.Context) error {
	now := time.Now()
	if r, ok := c.(*request); ok {
		now = r.start
	}
	head, err := s.pol.Head(now)
	if err != nil {
		return err
	}
	who := s.caller(c).Who
	applied, err := s.pol.AppliedVersion(head, who)
	if err != nil {
		return err
	}
	tag := s.bundleTag(applied)
	// The values are shared, read-only slices (len = cap, so an Add copies).
	hdr := c.Response().Header()
	hdr["Etag"] = tag.etagHdr
	hdr["Cache-Control"] = noCache
	if etagMatches(c.Request().Header.Get("If-None-Match"), tag.etag) {
		return c.NoContent(http.StatusNotModified)
	}
	b, err := s.pol.Bundle(c.Request().Context(), who)
	if err != nil {
		return err
	}
	// The store may have moved on between the two reads (the head above
	// can lag the store by a watch event): the ETag must name the bundle
	// actually sent, and a client that already holds it gets 304 — the one
	// it got from another replica, or from this one a moment ago.
	etag := bundleETag(b.Version)
	hdr.Set("ETag", etag)
	if etagMatches(c.Request().Header.Get("If-None-Match"), etag) {
		return c.NoContent(http.StatusNotModified)
	}
	hdr.Set("X-Wharf-Policy-Version", b.Version)
	return c.Blob(http.StatusOK, "application/gzip", b.Body)
}

// BundlePolicy is a verified bundle's content.
type BundlePolicy struct {
	Version     string
	Revision    uint64
	Layers      []PolicyLayer
	Revocations policy.Revocations
	ToolPins    []toolpin.Pin
	Admissions  *policy.Admissions
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
	out := BundlePolicy{Version: info.Version, Revision: info.Revision, Revocations: info.Revocations, ToolPins: info.ToolPins, Admissions: info.Admissions}
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
func (s *Server) BundleKeyID() string { return s.pol.KeyID() }
