package apiclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Marketplace is a marketplace as the server shows it (GET
// /v1/marketplaces).
type Marketplace struct {
	Name string `json:"name"`
	// Source is the source object ({"source": "github", "repo": ...}).
	Source      json.RawMessage `json:"source"`
	LastUpdated time.Time       `json:"lastUpdated"`
	Plugins     int             `json:"plugins"`
	// Error says why the server could not read the marketplace's catalog.
	Error string `json:"error,omitempty"`
}

// maxListPages bounds how many pages Marketplaces follows: far more than
// any real server has, few enough that a server sending links in a loop
// cannot keep a client busy.
const maxListPages = 1000

// Marketplaces lists the server's marketplaces, following its pages.
func (c *Client) Marketplaces(ctx context.Context) ([]Marketplace, error) {
	var all []Marketplace
	path := "/v1/marketplaces"
	for i := 0; i < maxListPages; i++ {
		res, err := c.Send(ctx, Request{Method: http.MethodGet, Path: path})
		if err != nil {
			return nil, err
		}
		var page []Marketplace
		if err := json.Unmarshal(res.Body, &page); err != nil {
			return nil, fmt.Errorf("wharf server %s answered GET %s with something else than a list of marketplaces: %w", c.Base, path, err)
		}
		all = append(all, page...)
		next := nextPath(res.Header.Get("Link"))
		if next == "" {
			return all, nil
		}
		path = next
	}
	return nil, fmt.Errorf("wharf server %s sent more than %d pages of marketplaces", c.Base, maxListPages)
}

// nextPath is the path of a Link header's rel="next" target when it is a
// path on the same server ("" otherwise).
func nextPath(link string) string {
	for _, part := range strings.Split(link, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
		if !ok || !strings.Contains(params, `rel="next"`) {
			continue
		}
		target = strings.TrimSpace(target)
		if !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
			continue
		}
		u, err := url.Parse(target[1 : len(target)-1])
		if err != nil || u.Scheme != "" || u.Host != "" || !strings.HasPrefix(u.Path, "/v1/") {
			continue
		}
		return u.RequestURI()
	}
	return ""
}

// AddMarketplace adds a marketplace to the server under name from source
// (a source object); the server fetches it before it answers.
func (c *Client) AddMarketplace(ctx context.Context, name string, src json.RawMessage) (Marketplace, error) {
	var m Marketplace
	err := c.Do(ctx, http.MethodPost, "/v1/marketplaces", map[string]any{"name": name, "source": src}, &m)
	return m, err
}

// RefreshMarketplace has the server fetch the marketplace again.
func (c *Client) RefreshMarketplace(ctx context.Context, name string) (Marketplace, error) {
	var m Marketplace
	err := c.Do(ctx, http.MethodPost, "/v1/marketplaces/"+url.PathEscape(name)+"/update", nil, &m)
	return m, err
}

// RemoveMarketplace removes the marketplace from the server.
func (c *Client) RemoveMarketplace(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/marketplaces/"+url.PathEscape(name), nil, nil)
}
