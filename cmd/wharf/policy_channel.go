package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/wharfhq/wharf/internal/client/policyremote"
	"github.com/wharfhq/wharf/plugin"
)

// maxChannelSettings bounds the managed settings document read from a server.
const maxChannelSettings = 1 << 20

// channelSettings fetches GET /v1/channels/{name}/claude-managed-settings
// from the policy server (--policy-url, else WHARF_POLICY_URL) with the
// token (--token, else WHARF_TOKEN), and returns it as a JSON document.
func (a *app) channelSettings(ctx context.Context, name string) ([]byte, error) {
	if err := plugin.ValidateName(name); err != nil {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--channel", Err: err, Hint: "name a channel listed by GET /v1/channels, e.g. --channel approved"}
	}
	raw := a.policyURL()
	if raw == "" {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--channel", Err: errors.New("no wharf server to ask for the channel"),
			Hint: "pass --policy-url https://wharf.example.com (or set WHARF_POLICY_URL)"}
	}
	base, err := policyremote.BaseURL(raw)
	if err != nil {
		return nil, usageError(err)
	}
	token := a.remote.token
	if token == "" {
		token = os.Getenv("WHARF_TOKEN")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	u := base + "/v1/channels/" + url.PathEscape(name) + "/claude-managed-settings"
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, usageError(err)
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeSource, Object: u, Err: err, Hint: "check that the wharf server is reachable at --policy-url"}
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxChannelSettings+1))
	if err != nil {
		return nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeSource, Object: u, Err: err, Hint: "retry"}
	}
	if len(body) > maxChannelSettings {
		return nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeSource, Object: u, Err: fmt.Errorf("the answer is larger than %d bytes", maxChannelSettings), Hint: "check that --policy-url names a wharf server"}
	}
	if res.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		msg := http.StatusText(res.StatusCode)
		if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		hint := "check the channel's name: GET /v1/channels lists them"
		if res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden {
			hint = "pass a valid token with --token (or WHARF_TOKEN)"
		}
		return nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeSource, Object: "channel " + name,
			Err: fmt.Errorf("%s answered %d: %s", base, res.StatusCode, msg), Hint: hint}
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil || doc["strictKnownMarketplaces"] == nil {
		return nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeSource, Object: u, Err: errors.New("the answer is not a managed-settings document"),
			Hint: "check that --policy-url names a wharf server with channels"}
	}
	var out bytes.Buffer
	if err := json.Indent(&out, body, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}
