// Package policyremote pulls the policy bundle of a wharf server
// (GET /v1/policy/bundle) and keeps a verified copy in a cache directory, so
// that policy is enforced the same way offline.
//
// Trust: the bundle is verified with the server's public key before it is
// used or cached, and again every time the cached copy is read. The key is
// either pinned (Options.Key, from --policy-key) or, when none is given,
// fetched from /v1/policy/bundle/key on first use and kept in the cache
// directory (trust on first use); from then on a bundle signed by any other
// key is refused until the stored key is removed or a key is pinned.
//
// A key can also be pinned by its id (Options.KeyID, from policyKey in the
// managed settings): the stored or fetched key must then have that id.
//
// Rollback: every bundle carries the server's policy revision. The highest
// revision accepted from each signing key is kept in bundle.json, and a
// bundle below it (or a different policy under the cached revision) is
// refused with TypeRollback and never cached. Expiry: with Options.MaxAge,
// a cached bundle the server last confirmed longer ago than that is not
// enforced offline; the pull fails closed with TypeStale.
//
// Cache layout under CacheDir: bundle.tar.gz (the bundle as served),
// bundle.json (its ETag, version, revision and key, the SHA-256 of
// bundle.tar.gz, when the server last confirmed it and the highest revision
// seen per key) and key.pem (the trusted-on-first-use key). Every file is
// written crash-safely: temp file, fsync, rename, fsync of the dir.
package policyremote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/core/apiclient"
	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/plugin"
)

// TypeUnavailable is the error type when no verified policy can be had: the
// server cannot be reached or refuses, and nothing is cached. Policy fails
// closed (exit 3).
const TypeUnavailable = "policy-unavailable"

// TypeStale is the error type when the server cannot be reached and the
// cached bundle was last confirmed longer ago than Options.MaxAge: policy
// fails closed (exit 3) until the server is reached again.
const TypeStale = "policy-stale"

// TypeRollback is the error type of a bundle whose revision is lower than
// one already seen from the same signing key (or that differs from the
// cached bundle under the same revision): an older policy served again. It
// is refused (trust layer, exit 4) and never cached.
const TypeRollback = "policy-rollback"

// DefaultTimeout bounds one pull (key and bundle).
const DefaultTimeout = 10 * time.Second

// File names in the cache directory.
const (
	BundleFile = "bundle.tar.gz"
	MetaFile   = "bundle.json"
	KeyFile    = "key.pem"
)

// Options configure a pull.
type Options struct {
	URL      string // the server's base URL (…/v1/policy/bundle is accepted too)
	Token    string // sent as Authorization: Bearer
	CacheDir string // see CacheDir
	Key      []byte // pinned PEM public key; nil for trust on first use
	// KeyID pins the key by its id (policy.BundleKeyID, "wharf-…") when
	// no PEM is pinned: the key stored or fetched must have this id.
	KeyID string
	// MaxAge, when positive, is how long a cached bundle may be enforced
	// offline after the server last confirmed it; past it, with the server
	// unreachable, the pull fails closed (TypeStale).
	MaxAge  time.Duration
	Client  *http.Client
	Timeout time.Duration    // default DefaultTimeout
	Now     func() time.Time // default time.Now
}

// Result is a pulled (or cached) policy.
type Result struct {
	Layers []policy.Layer    `json:"-"`
	Info   policy.BundleInfo `json:"bundle"`
	ETag   string            `json:"etag"`
	From   string            `json:"from"`   // "network" (200), "cache" (304 or offline)
	Status int               `json:"status"` // HTTP status, 0 when the server was not reached
	// Confirmed is when the server last said this bundle is current.
	Confirmed time.Time `json:"confirmed"`
	KeyID     string    `json:"keyid"`
	KeySource string    `json:"keySource"` // "pinned", "stored" or "first-use"
	CacheDir  string    `json:"cacheDir"`
	// Warnings: offline use of the cache, a key trusted on first use.
	Warnings []string `json:"warnings"`
}

// meta is bundle.json.
type meta struct {
	URL       string    `json:"url"`
	ETag      string    `json:"etag"`
	Version   string    `json:"version"`
	SHA256    string    `json:"sha256"` // of bundle.tar.gz: an ETag is only sent for the bundle it names
	Confirmed time.Time `json:"confirmed"`
	Revision  uint64    `json:"revision"`
	KeyID     string    `json:"keyid"`
	// Highest is the highest revision accepted so far, per signing key:
	// a bundle below it is a rollback.
	Highest map[string]uint64 `json:"highest,omitempty"`
}

// checkRevision refuses info when it goes back from what m has seen: a
// lower revision from the same key, or the cached revision with another
// policy version.
func (m *meta) checkRevision(info policy.BundleInfo, base string) error {
	if m == nil {
		return nil
	}
	high, seen := m.Highest[info.KeyID]
	if m.KeyID == info.KeyID && m.Revision > high {
		high, seen = m.Revision, true
	}
	if !seen {
		return nil
	}
	if info.Revision < high {
		return plugin.Errorf(plugin.LayerTrust, TypeRollback, base+"/v1/policy/bundle",
			"the server (or something between it and you) sent an older policy than one already enforced; the cached policy stays in force. If the server's policy store was restored from a backup on purpose, its administrator must rotate the bundle key",
			"policy bundle revision %d (%s) is older than revision %d already accepted from key %s: refused as a rollback", info.Revision, short(info.Version), high, info.KeyID)
	}
	if info.Revision == high && high > 0 && m.KeyID == info.KeyID && m.Revision == high && m.Version != "" && info.Version != m.Version {
		return plugin.Errorf(plugin.LayerTrust, TypeRollback, base+"/v1/policy/bundle",
			"the server sent a different policy under a revision already accepted; the cached policy stays in force. If the server's policy store was reset on purpose, its administrator must rotate the bundle key",
			"policy bundle revision %d is %s, but revision %d from key %s was %s: refused", info.Revision, short(info.Version), high, info.KeyID, short(m.Version))
	}
	return nil
}

// advance returns m's Highest with info counted.
func (m *meta) advance(info policy.BundleInfo) map[string]uint64 {
	out := map[string]uint64{}
	if m != nil {
		for k, v := range m.Highest {
			out[k] = v
		}
		if m.KeyID != "" && m.Revision > out[m.KeyID] {
			out[m.KeyID] = m.Revision
		}
	}
	if info.Revision > out[info.KeyID] {
		out[info.KeyID] = info.Revision
	}
	return out
}

// BaseURL normalizes a --policy-url: the server's base URL, without a
// trailing /v1/policy/bundle. Plain http is accepted only for loopback
// hosts, since the token travels with every request.
func BaseURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", plugin.Errorf(plugin.LayerIntent, "usage", raw, "give the server's URL, e.g. --policy-url https://wharf.example.com",
			"policy URL %q is not an http(s) URL", raw)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return "", plugin.Errorf(plugin.LayerIntent, "usage", raw, "use https:// for a policy server that is not on this machine",
			"policy URL %q: plain http:// is refused for a host other than loopback (the token would travel in the clear)", raw)
	}
	u.RawQuery, u.Fragment = "", ""
	p := strings.TrimSuffix(u.Path, "/")
	p = strings.TrimSuffix(p, "/v1/policy/bundle")
	u.Path = strings.TrimSuffix(p, "/")
	return u.String(), nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CacheDir is where the bundle of the server at base is kept:
// <home>/policy/<host>, with the port after an underscore.
func CacheDir(home, base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("policy URL %q has no host", base)
	}
	host := strings.ToLower(u.Hostname())
	if strings.ContainsAny(host, `/\`) || host == "." || host == ".." || host == "" {
		return "", fmt.Errorf("policy URL %q: host %q cannot name a directory", base, host)
	}
	name := strings.ReplaceAll(host, ":", "_") // IPv6
	if p := u.Port(); p != "" {
		name += "_" + p
	}
	return layout.New(home).PolicyBundle(name), nil
}

// Fetch pulls the bundle of the server at url with token, caching it in
// cacheDir; key is a pinned PEM public key or nil (trust on first use).
func Fetch(ctx context.Context, url, token, cacheDir string, key []byte) (*Result, error) {
	return Options{URL: url, Token: token, CacheDir: cacheDir, Key: key}.Fetch(ctx)
}

// Fetch pulls the bundle: a conditional GET with the cached ETag. 200: the
// new bundle is verified, then cached. 304: the cached one is used. The
// server unreachable or failing (5xx): the cached bundle is used, with a
// warning saying how old it is. No cached bundle and no server: an error of
// type TypeUnavailable (fail closed). A bundle that does not verify is
// refused (trust layer) and never cached.
func (o Options) Fetch(ctx context.Context) (*Result, error) {
	base, err := BaseURL(o.URL)
	if err != nil {
		return nil, err
	}
	if o.CacheDir == "" {
		return nil, errors.New("remote: no cache directory")
	}
	if o.Client == nil {
		o.Client = http.DefaultClient
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	res := &Result{CacheDir: o.CacheDir, Warnings: []string{}}

	key, keyErr := o.trustedKey(ctx, base, res)
	cachedBundle, cachedMeta := o.readCache()
	if keyErr != nil {
		if errors.As(keyErr, new(*unreachable)) && cachedBundle != nil && o.Key == nil {
			// Offline and no key stored: nothing can be verified.
			return nil, o.unavailable(base, keyErr, "the key to verify the cached bundle is missing from "+o.CacheDir)
		}
		if errors.As(keyErr, new(*unreachable)) {
			return nil, o.unavailable(base, keyErr, "")
		}
		return nil, keyErr
	}

	etag := ""
	if cachedBundle != nil && cachedMeta != nil && cachedMeta.SHA256 == sha256hex(cachedBundle) && cachedMeta.URL == base {
		etag = cachedMeta.ETag
	}
	status, body, respETag, err := o.get(ctx, base, "/v1/policy/bundle", etag)
	var refused *plugin.Error
	switch {
	case err == nil && status == http.StatusOK:
		layers, info, rerr := policy.ReadBundle(bytes.NewReader(body), key)
		if rerr != nil {
			return nil, o.keyHint(res, rerr) // never cached
		}
		if rerr := cachedMeta.checkRevision(info, base); rerr != nil {
			return nil, rerr // never cached
		}
		m := meta{URL: base, ETag: respETag, Version: info.Version, SHA256: sha256hex(body), Confirmed: o.Now().UTC(),
			Revision: info.Revision, KeyID: info.KeyID, Highest: cachedMeta.advance(info)}
		if werr := o.writeCache(body, m); werr != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("policy bundle %s could not be cached in %s: %v; it is enforced now but not offline", short(info.Version), o.CacheDir, werr))
		}
		res.fill(layers, info, m, "network", status, base)
		return res, nil
	case err == nil && status == http.StatusNotModified && etag != "":
		layers, info, rerr := policy.ReadBundle(bytes.NewReader(cachedBundle), key)
		if rerr != nil {
			return nil, cacheRefused(o.CacheDir, rerr)
		}
		m := *cachedMeta
		m.Confirmed = o.Now().UTC()
		if werr := atomicfile.WriteFile(filepath.Join(o.CacheDir, MetaFile), mustJSON(m), 0o644); werr != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("could not record the check in %s: %v", o.CacheDir, werr))
		}
		res.fill(layers, info, m, "cache", status, base)
		return res, nil
	case errors.As(err, &refused) && refused.Type == TypeUnavailable:
		// The server answered and said no (refusedByServer).
		return nil, err
	case err == nil && status < 500:
		// An answer that is neither the bundle nor "not modified".
		return nil, plugin.Errorf(plugin.LayerPolicy, TypeUnavailable, base, "check --policy-url: it must name a wharf server",
			"policy server %s answered %d to the bundle request: %s; failing closed", base, status, firstLine(body))
	}
	// Unreachable, or a server error: the cache, if any, still holds.
	cause := err
	if cause == nil {
		cause = fmt.Errorf("server answered %d %s", status, strings.TrimSpace(string(firstLine(body))))
	}
	if cachedBundle == nil || cachedMeta == nil {
		return nil, o.unavailable(base, cause, "")
	}
	layers, info, rerr := policy.ReadBundle(bytes.NewReader(cachedBundle), key)
	if rerr != nil {
		return nil, cacheRefused(o.CacheDir, rerr)
	}
	age := o.Now().Sub(cachedMeta.Confirmed).Round(time.Second)
	if o.MaxAge > 0 && age > o.MaxAge {
		return nil, plugin.Errorf(plugin.LayerPolicy, TypeStale, base,
			"reach the policy server (check the network and --token) so it can confirm its policy; until then nothing is allowed",
			"policy server %s unreachable (%v) and the cached policy bundle %s was last confirmed %s ago (%s), longer than the managed maxAge %s; failing closed",
			base, cause, short(info.Version), age, cachedMeta.Confirmed.Format(time.RFC3339), o.MaxAge)
	}
	res.fill(layers, info, *cachedMeta, "cache", status, base)
	res.Warnings = append(res.Warnings, fmt.Sprintf("policy server %s unreachable (%v); enforcing the cached policy bundle %s, last confirmed %s ago (%s)",
		base, cause, short(info.Version), age, cachedMeta.Confirmed.Format(time.RFC3339)))
	return res, nil
}

func (r *Result) fill(layers []policy.Layer, info policy.BundleInfo, m meta, from string, status int, base string) {
	for i := range layers {
		layers[i].Origin = "server " + base + " layer " + layers[i].Name
	}
	r.Layers, r.Info, r.ETag, r.From, r.Status, r.Confirmed, r.KeyID = layers, info, m.ETag, from, status, m.Confirmed, info.KeyID
}

// unreachable marks a failure to reach the server at all.
type unreachable struct{ err error }

func (u *unreachable) Error() string { return u.err.Error() }
func (u *unreachable) Unwrap() error { return u.err }

func (o Options) unavailable(base string, cause error, extra string) error {
	msg := "no policy bundle from " + base + " and none cached"
	if extra != "" {
		msg = "no policy bundle from " + base + ": " + extra
	}
	return plugin.Errorf(plugin.LayerPolicy, TypeUnavailable, base,
		"reach the policy server once (check --policy-url, the network and --token) so wharf can cache its policy; until then nothing is allowed",
		"%s (%w); failing closed", msg, cause)
}

// refusedByServer is a bundle request the server answered and refused (a
// bad token, a wrong URL): nothing is allowed until that changes, and the
// cache does not stand in. The cause is the API client's *APIError, with
// its hint.
func (o Options) refusedByServer(base string, ae *apiclient.APIError) error {
	hint := ae.Hint
	if hint == "" {
		hint = "check --policy-url"
	}
	return &plugin.Error{Layer: plugin.LayerPolicy, Type: TypeUnavailable, Object: base, Hint: hint,
		Err: fmt.Errorf("%w; failing closed", ae)}
}

// keyHint says what to do when a fresh bundle does not verify with the
// key trusted on first use: the server's key may have changed.
func (o Options) keyHint(res *Result, err error) error {
	var pe *plugin.Error
	if res.KeySource != "stored" || !errors.As(err, &pe) || pe.Type != plugin.TypeTrustRejected {
		return err
	}
	c := *pe
	p := filepath.Join(o.CacheDir, KeyFile)
	c.Hint = "the server's bundle is not signed by the key trusted on first use (" + p + "); if the server's key changed on purpose, remove that file or pin the new key with --policy-key"
	return &c
}

func cacheRefused(dir string, err error) error {
	var pe *plugin.Error
	if errors.As(err, &pe) {
		c := *pe
		c.Object = filepath.Join(dir, BundleFile)
		c.Hint = "the cached policy bundle does not verify; remove " + dir + " and pull again from the server"
		return &c
	}
	return err
}

// trustedKey returns the PEM key bundles must be signed with: the pinned
// one, else the stored one, else the server's, stored on first use.
func (o Options) trustedKey(ctx context.Context, base string, res *Result) ([]byte, error) {
	if o.Key != nil {
		k, err := policy.ParseBundleKey(o.Key)
		if err != nil {
			return nil, err
		}
		res.KeySource = "pinned"
		res.KeyID, _ = policy.BundleKeyID(k)
		return o.Key, nil
	}
	p := filepath.Join(o.CacheDir, KeyFile)
	if b, err := os.ReadFile(p); err == nil {
		k, err := policy.ParseBundleKey(b)
		if err != nil {
			var pe *plugin.Error
			if errors.As(err, &pe) {
				c := *pe
				c.Object, c.Hint = p, "remove "+p+" to trust the server's key again, or pin it with --policy-key"
				return nil, &c
			}
			return nil, err
		}
		id, _ := policy.BundleKeyID(k)
		// A stored key that is not the pinned one is not used; the
		// server's key is fetched and must be the pinned one.
		if o.KeyID == "" || id == o.KeyID {
			res.KeySource = "stored"
			res.KeyID = id
			if o.KeyID != "" {
				res.KeySource = "pinned"
			}
			return b, nil
		}
	}
	status, body, _, err := o.get(ctx, base, "/v1/policy/bundle/key", "")
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, plugin.Errorf(plugin.LayerPolicy, TypeUnavailable, base, "check --policy-url: it must name a wharf server",
			"policy server %s answered %d to the key request; failing closed", base, status)
	}
	var bk struct {
		KeyID     string `json:"keyid"`
		Algorithm string `json:"algorithm"`
		PublicKey string `json:"publicKey"`
	}
	if err := json.Unmarshal(body, &bk); err != nil || bk.PublicKey == "" {
		return nil, plugin.Errorf(plugin.LayerTrust, plugin.TypeTrustRejected, base+"/v1/policy/bundle/key",
			"check --policy-url: it must name a wharf server", "the policy server's key is not a wharf bundle key: %s", firstLine(body))
	}
	if bk.Algorithm != "" && bk.Algorithm != policy.BundleAlgorithm {
		return nil, plugin.Errorf(plugin.LayerTrust, plugin.TypeTrustRejected, base+"/v1/policy/bundle/key",
			"this wharf only verifies "+policy.BundleAlgorithm+" bundles", "the policy server signs with %q", bk.Algorithm)
	}
	k, err := policy.ParseBundleKey([]byte(bk.PublicKey))
	if err != nil {
		return nil, err
	}
	id, _ := policy.BundleKeyID(k)
	if o.KeyID != "" && id != o.KeyID {
		return nil, plugin.Errorf(plugin.LayerTrust, plugin.TypeTrustRejected, base+"/v1/policy/bundle/key",
			"the managed settings pin the policy bundle key "+o.KeyID+"; if the server's key changed on purpose, the administrator must update policyKey",
			"the policy server's bundle key is %s, not the pinned %s: refused", id, o.KeyID)
	}
	if err := os.MkdirAll(o.CacheDir, 0o755); err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(p, []byte(bk.PublicKey), 0o644); err != nil {
		return nil, fmt.Errorf("storing the policy server's key: %w", err)
	}
	if o.KeyID != "" {
		res.KeySource, res.KeyID = "pinned", id
		return []byte(bk.PublicKey), nil
	}
	res.KeySource, res.KeyID = "first-use", id
	res.Warnings = append(res.Warnings, fmt.Sprintf("trusting the policy bundle key %s of %s on first use (stored in %s); pin it with --policy-key to verify it out of band", id, base, p))
	return []byte(bk.PublicKey), nil
}

// get sends one GET through the API client. No answer, or a server error
// (5xx), is *unreachable: the cached bundle still holds. A refusal (4xx) is
// refusedByServer's error around the client's *apiclient.APIError.
func (o Options) get(ctx context.Context, base, path, ifNoneMatch string) (int, []byte, string, error) {
	cl := &apiclient.Client{Base: base, Token: o.Token, HTTP: o.Client}
	req := apiclient.Request{Method: http.MethodGet, Path: path, Limit: policy.MaxBundleBytes, Header: http.Header{"Accept": {"*/*"}}}
	if ifNoneMatch != "" {
		req.Header.Set("If-None-Match", ifNoneMatch)
	}
	res, err := cl.Send(ctx, req)
	var ae *apiclient.APIError
	var tl *apiclient.TooLargeError
	switch {
	case errors.As(err, &tl):
		return 0, nil, "", plugin.Errorf(plugin.LayerTrust, policy.TypeBundleInvalid, base+path, "check --policy-url",
			"policy bundle is larger than %d MiB", policy.MaxBundleBytes>>20)
	case errors.As(err, &ae) && ae.Status >= 500:
		return 0, nil, "", &unreachable{err}
	case errors.As(err, &ae):
		return 0, nil, "", o.refusedByServer(base, ae)
	case err != nil:
		return 0, nil, "", &unreachable{err}
	}
	return res.Status, res.Body, res.Header.Get("ETag"), nil
}

// readCache returns the cached bundle and its meta, or nils.
func (o Options) readCache() ([]byte, *meta) {
	b, err := os.ReadFile(filepath.Join(o.CacheDir, BundleFile))
	if err != nil {
		return nil, nil
	}
	mb, err := os.ReadFile(filepath.Join(o.CacheDir, MetaFile))
	if err != nil {
		return b, nil
	}
	var m meta
	if json.Unmarshal(mb, &m) != nil {
		return b, nil
	}
	return b, &m
}

// writeCache stores the bundle, then its meta. A crash between the two
// leaves a meta whose sha256 does not match: its ETag is then not sent.
func (o Options) writeCache(body []byte, m meta) error {
	if err := os.MkdirAll(o.CacheDir, 0o755); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(o.CacheDir, BundleFile), body, 0o644); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(o.CacheDir, MetaFile), mustJSON(m), 0o644)
}

func mustJSON(v any) []byte {
	b, _ := json.MarshalIndent(v, "", "  ")
	return append(b, '\n')
}

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func firstLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	if len(b) > 200 {
		b = b[:200]
	}
	return b
}

func short(v string) string {
	if len(v) > 19 {
		return v[:19]
	}
	return v
}
