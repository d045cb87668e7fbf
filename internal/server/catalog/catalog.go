// Package catalog is the server's view of its marketplaces: the types the
// API serves of them (Marketplace, PluginSummary, PluginDetail) and
// Marketplaces, one parsed snapshot of every marketplace.json over a
// marketplace.Manager, with the answers to searches and plugin lookups
// kept beside the snapshot they were computed from.
package catalog

import (
	"context"
	"encoding/json"
	"time"

	"github.com/wharfhq/wharf/plugin"
)

// Catalog is the set of known marketplaces and their plugins, as the server
// sees it. Implementations must be safe for concurrent use: handlers call
// Search and Plugin from many goroutines while an admin updates a marketplace.
// Errors that are the caller's fault are *plugin.Error values (TypeNotFound,
// TypeConflict, TypeInvalidID, TypeSource...) or *FieldError; their type
// decides the status.
type Catalog interface {
	Marketplaces(ctx context.Context) ([]Marketplace, error)
	// AddMarketplace registers and fetches a marketplace. Adding a name that
	// exists is a TypeConflict error.
	AddMarketplace(ctx context.Context, name string, source json.RawMessage) (Marketplace, error)
	UpdateMarketplace(ctx context.Context, name string) (Marketplace, error)
	RemoveMarketplace(ctx context.Context, name string) error
	Search(ctx context.Context, q SearchQuery) ([]PluginSummary, error)
	Plugin(ctx context.Context, id plugin.ID) (PluginDetail, error)
}

// Marketplace is one known marketplace (the fields of
// `wharf marketplace list --json`, plus the plugin count).
type Marketplace struct {
	Name            string          `json:"name"`
	Source          json.RawMessage `json:"source"`
	InstallLocation string          `json:"installLocation,omitempty"`
	LastUpdated     time.Time       `json:"lastUpdated"`
	Plugins         int             `json:"plugins"`
	// AllowCrossMarketplaceDependenciesOn lists the marketplaces this one's
	// plugins may depend on.
	AllowCrossMarketplaceDependenciesOn []string `json:"allowCrossMarketplaceDependenciesOn,omitempty"`
	// Error says why the marketplace's catalog could not be read, if so.
	Error string `json:"error,omitempty"`
}

// SearchQuery filters the catalog. Empty fields match everything.
type SearchQuery struct {
	Text        string
	Marketplace string
	Category    string
	Limit       int
}

// PluginSummary is one search hit (the fields of `wharf search --json`).
type PluginSummary struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Marketplace string   `json:"marketplace"`
	Version     string   `json:"version,omitempty"`
	Description string   `json:"description,omitempty"`
	Category    string   `json:"category,omitempty"`
	Tags        []string `json:"tags,omitempty"`
}

// PluginDetail is everything the server knows about one plugin entry.
type PluginDetail struct {
	PluginSummary
	// Entry is the marketplace entry as published (hostile input, passed
	// through as JSON).
	Entry      json.RawMessage `json:"entry,omitempty"`
	Components []Component     `json:"components"`
	// Namespace prefixes the components' names in an agent: the
	// plugin.json name when it has one (plugin.Plugin.Namespace); empty
	// when the plugin is not stored in the marketplace.
	Namespace string `json:"namespace,omitempty"`
	// AlwaysOnTokens is the context the plugin adds to every Claude Code
	// session (plugin.Plugin.AlwaysOnTokens); absent when the plugin is
	// not stored in the marketplace.
	AlwaysOnTokens *int                `json:"alwaysOnTokens,omitempty"`
	Dependencies   []plugin.Dependency `json:"dependencies"`
	Digest         string              `json:"digest,omitempty"`
	Signatures     []Signature         `json:"signatures"`
	// MarketplaceSource is the source object of the plugin's marketplace;
	// policy decides over it (strictKnownMarketplaces, blockedMarketplaces).
	MarketplaceSource json.RawMessage `json:"-"`
}

// Component is one command, skill, agent, hook, MCP/LSP server or output style.
type Component struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	Path string `json:"path,omitempty"`
}

// Signature is one signature over a w1: digest (FORMATS.md).
type Signature struct {
	KeyID string `json:"keyid"`
	Sig   string `json:"sig"`
}

// FieldError is a request field the catalog cannot use (a marketplace
// source that does not parse).
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }
