package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Target is who a policy layer applies to: the tokens with one of its
// groups or labels (key=value). Absent or empty: the organization.
type Target struct {
	Groups []string `json:"groups,omitempty"`
	Labels []string `json:"labels,omitempty"`
}

// PolicyLayer is a policy layer as the server stores it (GET
// /v1/policy/layers/{layer}).
type PolicyLayer struct {
	Name      string            `json:"name"`
	Rank      int               `json:"rank"`
	Version   uint64            `json:"version"`
	Settings  json.RawMessage   `json:"settings"`
	Modules   map[string]string `json:"modules"`
	Target    *Target           `json:"target,omitempty"`
	UpdatedAt time.Time         `json:"updatedAt"`
	UpdatedBy string            `json:"updatedBy"`
}

// Policy is the server's policy as the caller sees it (GET /v1/policy).
type Policy struct {
	Version  string        `json:"version"`
	Revision uint64        `json:"revision"`
	Layers   []PolicyLayer `json:"layers"`
	Warnings []string      `json:"warnings"`
}

// LayerWrite is what the server answers to a layer's PUT or DELETE.
type LayerWrite struct {
	Layer         *PolicyLayer `json:"layer,omitempty"`
	PolicyVersion string       `json:"policyVersion"`
	Revision      uint64       `json:"revision"`
	Warnings      []string     `json:"warnings"`
}

// LayerChange is a layer's PUT body. A nil Rank or Target leaves the
// layer's unchanged (for a new layer: rank 100, the organization).
type LayerChange struct {
	Rank     *int              `json:"rank,omitempty"`
	Target   *Target           `json:"target,omitempty"`
	Settings json.RawMessage   `json:"settings"`
	Modules  map[string]string `json:"modules"`
}

// LayerHistoryEntry is one change of one layer (GET /v1/policy/history);
// Document is the layer as written, nil for a deletion.
type LayerHistoryEntry struct {
	Seq           uint64       `json:"seq"`
	Time          time.Time    `json:"time"`
	Action        string       `json:"action"`
	Layer         string       `json:"layer"`
	LayerVersion  uint64       `json:"layerVersion"`
	PolicyVersion string       `json:"policyVersion"`
	Revision      uint64       `json:"revision"`
	Actor         string       `json:"actor"`
	Document      *PolicyLayer `json:"document,omitempty"`
}

// Policy returns the server's policy: for an admin, every layer.
func (c *Client) Policy(ctx context.Context) (Policy, error) {
	var p Policy
	err := c.Do(ctx, http.MethodGet, "/v1/policy", nil, &p)
	return p, err
}

// Layer returns the named layer; a layer the server does not have is nil
// with no error.
func (c *Client) Layer(ctx context.Context, name string) (*PolicyLayer, error) {
	var l PolicyLayer
	err := c.Do(ctx, http.MethodGet, "/v1/policy/layers/"+url.PathEscape(name), nil, &l)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &l, nil
}

// PutLayer writes the layer: version 0 creates it (If-None-Match: *),
// any other version changes it only while the server holds that version
// (If-Match), so a change made meanwhile is never overwritten.
func (c *Client) PutLayer(ctx context.Context, name string, version uint64, ch LayerChange) (LayerWrite, error) {
	h := http.Header{}
	if version == 0 {
		h.Set("If-None-Match", "*")
	} else {
		h.Set("If-Match", `"`+strconv.FormatUint(version, 10)+`"`)
	}
	return c.layerWrite(ctx, http.MethodPut, name, h, ch)
}

// DeleteLayer deletes the layer, whatever its version (If-Match: *).
func (c *Client) DeleteLayer(ctx context.Context, name string) (LayerWrite, error) {
	return c.layerWrite(ctx, http.MethodDelete, name, http.Header{"If-Match": {"*"}}, nil)
}

func (c *Client) layerWrite(ctx context.Context, method, name string, h http.Header, body any) (LayerWrite, error) {
	path := "/v1/policy/layers/" + url.PathEscape(name)
	res, err := c.Send(ctx, Request{Method: method, Path: path, Header: h, JSON: body})
	if err != nil {
		return LayerWrite{}, err
	}
	var w LayerWrite
	if err := json.Unmarshal(res.Body, &w); err != nil {
		return LayerWrite{}, fmt.Errorf("wharf server %s answered %s %s with something else than a layer write: %w", c.Base, method, path, err)
	}
	return w, nil
}

// LayerHistory lists the changes of the policy's layers (of one layer
// when layer is not ""), oldest first, following the server's pages.
func (c *Client) LayerHistory(ctx context.Context, layer string) ([]LayerHistoryEntry, error) {
	var all []LayerHistoryEntry
	cursor := ""
	for i := 0; i < maxListPages; i++ {
		q := url.Values{}
		if layer != "" {
			q.Set("layer", layer)
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		path := "/v1/policy/history"
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		var page struct {
			Entries []LayerHistoryEntry `json:"entries"`
			Next    string              `json:"next"`
		}
		if err := c.Do(ctx, http.MethodGet, path, nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Entries...)
		if strings.TrimSpace(page.Next) == "" || page.Next == cursor {
			return all, nil
		}
		cursor = page.Next
	}
	return nil, fmt.Errorf("wharf server %s sent more than %d pages of policy history", c.Base, maxListPages)
}
