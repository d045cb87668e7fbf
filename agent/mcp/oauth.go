package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// ErrSignInRequired: a remote server with an "oauth" object asked for a
// sign-in, and the agent was given no way to show the sign-in page
// (Options.Authorize is nil).
var ErrSignInRequired = errors.New("the server needs a sign-in (OAuth), but this agent cannot open a sign-in page; run it from an agent that can (Options.Authorize), or remove \"oauth\" and pass a token in \"headers\"")

// oauthConfig is Claude Code's "oauth" object of a remote server in
// .mcp.json: a client id registered in advance with the server's
// authorization server, and the fixed loopback port of the redirect URI
// registered with it.
type oauthConfig struct {
	ClientID     string `json:"clientId"`
	CallbackPort int    `json:"callbackPort"`
}

// parseOAuth reads the "oauth" object as written (nil: none, or one
// without a clientId, which this package does not sign in for).
func parseOAuth(raw json.RawMessage) (*oauthConfig, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var c oauthConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("\"oauth\" in .mcp.json: %v; write it as {\"clientId\": \"...\", \"callbackPort\": 3118}", err)
	}
	if c.ClientID == "" {
		return nil, nil
	}
	if c.CallbackPort < 0 || c.CallbackPort > 65535 {
		return nil, fmt.Errorf("\"oauth.callbackPort\" in .mcp.json is %d; use a port from 1 to 65535 (the one registered with the client id)", c.CallbackPort)
	}
	return &c, nil
}

// oauthHandler returns the authorization-code handler of a remote server
// with a pre-registered client id. Handlers are kept by server, client id
// and url for the life of the Supervisor, so a restart reuses the token it
// obtained; tokens are kept in memory only.
func (s *Supervisor) oauthHandler(server, url string, c *oauthConfig) (*auth.AuthorizationCodeHandler, error) {
	port := c.CallbackPort
	key := server + "\x00" + url + "\x00" + c.ClientID + "\x00" + strconv.Itoa(port)
	s.mu.Lock()
	h := s.oauth[key]
	s.mu.Unlock()
	if h != nil {
		return h, nil
	}
	if port == 0 {
		// No fixed port: a free one, for the life of this handler (as
		// Claude Code does; the authorization server must accept any
		// loopback port).
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port for the sign-in callback: %w", err)
		}
		port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		PreregisteredClient:      &oauthex.ClientCredentials{ClientID: c.ClientID},
		RedirectURL:              "http://localhost:" + strconv.Itoa(port) + "/callback",
		AuthorizationCodeFetcher: s.fetchCode(server, port),
		Client:                   s.o.HTTPClient,
	})
	if err != nil {
		return nil, fmt.Errorf("\"oauth\" in .mcp.json: %w", err)
	}
	s.mu.Lock()
	if old := s.oauth[key]; old != nil {
		h = old
	} else {
		s.oauth[key] = h
	}
	s.mu.Unlock()
	return h, nil
}

// fetchCode returns the step of the flow that involves the user: it
// listens on the loopback callback port, hands the authorization URL to
// Options.Authorize, and waits for the browser's redirect with the code
// (bounded by the start's context, so by StartTimeout).
func (s *Supervisor) fetchCode(server string, port int) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		if s.o.Authorize == nil {
			return nil, ErrSignInRequired
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("listening for the sign-in callback on %s: %w; free that port (\"oauth.callbackPort\" in .mcp.json) and restart the server", addr, err)
		}
		type result struct {
			res *auth.AuthorizationResult
			err error
		}
		got := make(chan result, 1)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/callback" {
				http.NotFound(w, r)
				return
			}
			q := r.URL.Query()
			var res result
			if e := q.Get("error"); e != "" {
				res.err = fmt.Errorf("the sign-in was refused: %s %s", e, q.Get("error_description"))
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, "Sign-in to %s failed: %s. You can close this window.\n", html.EscapeString(server), html.EscapeString(e))
			} else {
				res.res = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
				fmt.Fprintf(w, "Signed in to %s. You can close this window.\n", html.EscapeString(server))
			}
			select {
			case got <- res:
			default: // a second redirect: the first one counts
			}
		})}
		go srv.Serve(ln)
		defer srv.Close()

		opened := make(chan error, 1)
		go func() { opened <- s.o.Authorize(ctx, server, args.URL) }()
		for {
			select {
			case r := <-got:
				return r.res, r.err
			case err := <-opened:
				if err != nil {
					return nil, fmt.Errorf("opening the sign-in page: %w", err)
				}
				opened = nil // now wait for the redirect
			case <-ctx.Done():
				return nil, fmt.Errorf("waiting for the sign-in to finish: %w", ctx.Err())
			}
		}
	}
}

// oauthTransport does for the SSE transport what the SDK's streamable
// transport does with an OAuth handler: it sends the token, and on a 401
// or 403 runs the handler's sign-in once and sends the request again.
type oauthTransport struct {
	h    auth.OAuthHandler
	base http.RoundTripper
}

func (t *oauthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	send := func(req *http.Request) (*http.Response, error) {
		ts, err := t.h.TokenSource(req.Context())
		if err != nil {
			return nil, err
		}
		if ts != nil {
			tok, err := ts.Token()
			if err != nil {
				return nil, fmt.Errorf("the OAuth token: %w", err)
			}
			req = req.Clone(req.Context())
			tok.SetAuthHeader(req)
		}
		return t.base.RoundTrip(req)
	}
	resp, err := send(req)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return resp, nil // cannot be sent again
	}
	if err := t.h.Authorize(req.Context(), req, resp); err != nil {
		return nil, err
	}
	again := req.Clone(req.Context())
	if req.GetBody != nil {
		if again.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	return send(again)
}
