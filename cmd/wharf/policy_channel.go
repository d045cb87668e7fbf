package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/client/policyremote"
	"github.com/wharfhq/wharf/internal/core/apiclient"
	"github.com/wharfhq/wharf/plugin"
)

// maxChannelSettings bounds the managed settings document read from a server.
const maxChannelSettings = 1 << 20

// channelSettings fetches GET /v1/channels/{name}/claude-managed-settings
// from the policy server (--policy-url, else WHARF_SERVER) with the token
// (--token, else WHARF_TOKEN, else the login's for that server), as the
// home's configuration holds them, and returns it as a JSON document.
func channelSettings(ctx context.Context, h *home.Home, name string) ([]byte, error) {
	body, u, err := channelGet(ctx, h, name, "claude")
	if err != nil {
		return nil, err
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

// channelGet fetches GET /v1/channels/{name}/{format}-managed-settings
// and returns the body and the URL it asked.
func channelGet(ctx context.Context, h *home.Home, name, format string) ([]byte, string, error) {
	if err := plugin.ValidateName(name); err != nil {
		return nil, "", &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--channel", Err: err, Hint: "name a channel listed by GET /v1/channels, e.g. --channel approved"}
	}
	raw := h.Config().Policy.URL
	if raw == "" {
		return nil, "", &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--channel", Err: errors.New("no wharf server to ask for the channel"),
			Hint: "pass --policy-url https://wharf.example.com (or set WHARF_SERVER)"}
	}
	base, err := policyremote.BaseURL(raw)
	if err != nil {
		return nil, "", usageError(err)
	}
	token := h.Config().Policy.TokenFor(base) // the given token, else the login's for its server
	if ctx == nil {
		ctx = context.Background()
	}
	cl, err := apiclient.New(base, token, nil)
	if err != nil {
		return nil, "", usageError(err)
	}
	path := "/v1/channels/" + url.PathEscape(name) + "/" + format + "-managed-settings"
	u := base + path
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := cl.Send(ctx, apiclient.Request{Method: http.MethodGet, Path: path, Limit: maxChannelSettings})
	var tl *apiclient.TooLargeError
	if errors.As(err, &tl) {
		return nil, "", &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeSource, Object: u, Err: err, Hint: "check that --policy-url names a wharf server"}
	}
	if err != nil {
		// A refusal or no answer: the client's one error for it.
		return nil, "", err
	}
	return res.Body, u, nil
}
