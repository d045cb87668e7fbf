package api

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"time"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/catalog"
	"github.com/wharfhq/wharf/internal/server/fleet"
	"github.com/wharfhq/wharf/internal/server/identity"
	"github.com/wharfhq/wharf/plugin"
)

// The catalog's types are package catalog's (internal/server/catalog),
// which keeps the server's snapshot of its marketplaces.
type (
	Catalog       = catalog.Catalog
	Marketplace   = catalog.Marketplace
	SearchQuery   = catalog.SearchQuery
	PluginSummary = catalog.PluginSummary
	PluginDetail  = catalog.PluginDetail
	Component     = catalog.Component
	Signature     = catalog.Signature
)

// PolicyLayer is one stored policy layer as the policy engine consumes it.
type PolicyLayer struct {
	Name     string
	Settings json.RawMessage // a settings document (managed keys)
	Modules  map[string]string
}

// PolicyCompiler builds a decision engine from the ordered layers (highest
// authority first). It is called once per policy version; the result is
// cached and shared by concurrent requests, so it must be safe for
// concurrent use.
type PolicyCompiler func(ctx context.Context, layers []PolicyLayer) (Decider, error)

// Decider answers whether a plugin may be used.
type Decider interface {
	Decide(ctx context.Context, in DecisionInput) (Decision, error)
}

// MarketplaceDecider is implemented by a Decider that can also rule on
// marketplaces (strictKnownMarketplaces, blockedMarketplaces). When the
// current policy's Decider has it, adding or updating a marketplace asks
// first, before any network or disk access.
type MarketplaceDecider interface {
	DecideMarketplace(ctx context.Context, name string, source json.RawMessage, update bool) (Decision, error)
}

// DecisionInput is what the server knows when it asks for a decision.
type DecisionInput struct {
	Plugin            plugin.ID
	MarketplaceSource json.RawMessage
	Dependencies      []plugin.ID
	Components        []Component
	// RequiredBy is the plugin that brought this one into a closure (zero
	// for a plugin asked for by name).
	RequiredBy plugin.ID
	// Content is the plugin tree's capability set and findings, when the
	// caller has the tree (a channel build); nil otherwise.
	Content *policy.Content
}

// Decision is a policy verdict with the reasons that decided it.
type Decision struct {
	Allowed       bool     `json:"allowed"`
	Forced        string   `json:"forced,omitempty"` // "on", "off" or ""
	Reasons       []Reason `json:"reasons"`
	Warnings      []string `json:"warnings"`
	PolicyVersion string   `json:"policyVersion"`
}

// Reason names the layer and rule behind a decision.
type Reason struct {
	Layer   string `json:"layer"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// Verifier checks signatures over what they sign. Safe for concurrent use.
type Verifier interface {
	VerifySignatures(ctx context.Context, subject SignedSubject, sigs []Signature) ([]SignatureVerdict, error)
}

// SignedSubject is what signatures are checked against: a content digest
// and, when known, the plugin (name@marketplace) and version published with
// it. With a plugin, a signature must cover the statement binding all four
// (or, weaker, the bare digest); without, only bare-digest signatures can
// verify.
type SignedSubject struct {
	Plugin  plugin.ID
	Version string
	Digest  string
}

// SignatureVerdict is the result for one signature (`wharf verify --json`).
type SignatureVerdict struct {
	KeyID   string `json:"keyid"`
	Valid   bool   `json:"valid"`
	Trusted bool   `json:"trusted"`
	// Legacy: valid, but over the bare digest (the old form), which does
	// not bind the plugin's name, marketplace or version.
	Legacy bool   `json:"legacy,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Deps is everything a Server is built from. Store is required; a nil
// Catalog, Policy or Verifier makes the routes that need it answer
// 503 with a message naming what is missing.
type Deps struct {
	Store    store.Store
	Catalog  Catalog
	Policy   PolicyCompiler
	Verifier Verifier
	Logger   *slog.Logger

	// BodyLimit bounds request bodies (default 1 MiB).
	BodyLimit int64
	// RequestTimeout bounds one request's handler (default 30s).
	RequestTimeout time.Duration
	// RateLimit is the sustained request rate per token (default 50/s);
	// negative disables rate limiting. RateBurst defaults to 2×RateLimit.
	RateLimit float64
	RateBurst int
	// StateCacheTTL is how long a replica may serve a known token and the
	// policy head from memory before reading the store again (default 1s;
	// negative: always read). Changes made through this server apply at
	// once. While Serve runs over a store.Watcher, changes made through
	// another replica apply as soon as their watch event arrives, and
	// entries do not expire while every watch has proven itself current
	// within the last second (a progress mark); otherwise they live for
	// the TTL, and no longer than a second (package follow).
	StateCacheTTL time.Duration
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	// TrustedProxies are the reverse proxies whose X-Forwarded-For is
	// believed for the client's address. Empty (the default): the address
	// is the connection's, and X-Forwarded-For is ignored.
	TrustedProxies []*net.IPNet
	// ReportRate is the sustained inventory reports per second one machine
	// may send (default 0.1: one every 10 s); negative disables the limit.
	// ReportBurst defaults to 6.
	ReportRate  float64
	ReportBurst int
	// Inventory tunes the fleet inventory's store (fleet.Options).
	Inventory fleet.Options
	// MaxClients bounds the per-address rate-limit buckets (default 10000);
	// the least recently used address is forgotten first.
	MaxClients int

	// ChannelDir is where channels' git repositories and the server's
	// verified copies of plugin trees live (wharf-server: <data>/channels).
	// Empty: the channel routes and /git/ answer 503.
	ChannelDir string
	// Fetcher fetches plugin trees for channels (nil: source.NewFetcher()).
	Fetcher *source.Fetcher
	// PublicURL is the server's address as clients reach it (e.g.
	// https://wharf.corp.example), used in channels' clone URLs; empty:
	// the scheme and Host of each request.
	PublicURL string
	// DataDir is where the store keeps its files (wharf-server: --data),
	// named when a write fails for lack of space; empty for a store
	// elsewhere (etcd).
	DataDir string
	// Revocations returns the revoked plugins and digests that channels
	// leave out (nil: the server's own, from POST /v1/revocations).
	Revocations func(ctx context.Context) (policy.Revocations, error)
	// Identity is the OpenID Connect sign-in (console and wharf login);
	// nil: tokens only (auth.go).
	Identity *identity.Provider
}
