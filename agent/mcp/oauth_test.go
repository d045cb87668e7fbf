package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/plugin"
)

// oauthWorld is a loopback authorization server and an MCP server that
// only answers requests with the token it issues.
type oauthWorld struct {
	as, rs   *httptest.Server
	clientID string
	port     int

	mu        sync.Mutex
	challenge string // PKCE challenge of the last /authorize
	redirect  string // redirect_uri of the last /authorize
	// tokenClients are the client ids of the token requests that named
	// the pre-registered one.
	tokenClients []string
}

func newOAuthWorld(t *testing.T, transport string) *oauthWorld {
	t.Helper()
	w := &oauthWorld{clientID: "1601185624273.8899143856786"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	asMux := http.NewServeMux()
	w.as = httptest.NewServer(asMux)
	t.Cleanup(w.as.Close)
	asMux.HandleFunc("/.well-known/oauth-authorization-server", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		json.NewEncoder(rw).Encode(map[string]any{
			"issuer":                           w.as.URL,
			"authorization_endpoint":           w.as.URL + "/authorize",
			"token_endpoint":                   w.as.URL + "/token",
			"response_types_supported":         []string{"code"},
			"code_challenge_methods_supported": []string{"S256"},
		})
	})
	asMux.HandleFunc("/authorize", func(rw http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("client_id") != w.clientID || q.Get("response_type") != "code" {
			http.Error(rw, "unknown client "+q.Get("client_id"), http.StatusBadRequest)
			return
		}
		w.mu.Lock()
		w.challenge, w.redirect = q.Get("code_challenge"), q.Get("redirect_uri")
		w.mu.Unlock()
		http.Redirect(rw, r, q.Get("redirect_uri")+"?code=the-code&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	asMux.HandleFunc("/token", func(rw http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		// A public client names itself in the form or, with an empty
		// secret, in Basic authentication.
		client := r.PostForm.Get("client_id")
		if user, _, ok := r.BasicAuth(); ok {
			client = user
		}
		w.mu.Lock()
		challenge := w.challenge
		if client == w.clientID {
			w.tokenClients = append(w.tokenClients, client)
		}
		w.mu.Unlock()
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if r.PostForm.Get("code") != "the-code" || client != w.clientID ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != challenge {
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(rw, `{"error":"invalid_grant"}`)
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		fmt.Fprint(rw, `{"access_token":"tok-1","token_type":"Bearer","expires_in":3600}`)
	})

	srv := sdk.NewServer(&sdk.Implementation{Name: "slack", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "post"}, func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "posted"}}}, nil, nil
	})
	var h http.Handler
	if transport == "sse" {
		h = sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	} else {
		h = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	}
	rsMux := http.NewServeMux()
	w.rs = httptest.NewServer(rsMux)
	t.Cleanup(w.rs.Close)
	rsMux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		json.NewEncoder(rw).Encode(map[string]any{"resource": w.rs.URL + "/mcp", "authorization_servers": []string{w.as.URL}})
	})
	rsMux.HandleFunc("/mcp", func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-1" {
			rw.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+w.rs.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(rw, "sign in", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(rw, r)
	})
	return w
}

func (w *oauthWorld) component(transport string) agent.Component {
	oauth := fmt.Sprintf(`{"clientId":%q,"callbackPort":%d}`, w.clientID, w.port)
	return agent.Component{Kind: plugin.KindMCPServer, Name: "plugin:slack:slack", Local: "slack", Plugin: plugin.MustParseID("slack@corp"),
		Source: agent.SourcePlugin, MCP: &plugin.MCPServer{Type: transport, URL: w.rs.URL + "/mcp",
			Extra: map[string]json.RawMessage{"oauth": json.RawMessage(oauth)}}}
}

// signIns are the servers Authorize was called for.
type signIns struct {
	mu      sync.Mutex
	servers []string
}

func (s *signIns) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.servers...)
}

// followAuthURL is a browser that signs in at once: it follows the
// authorization URL and the redirect back to the callback.
func followAuthURL(seen *signIns) func(ctx context.Context, server, authURL string) error {
	return func(ctx context.Context, server, authURL string) error {
		seen.mu.Lock()
		seen.servers = append(seen.servers, server)
		seen.mu.Unlock()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("sign-in page %s: %s", resp.Request.URL, resp.Status)
		}
		return nil
	}
}

func TestOAuthPreregisteredClient(t *testing.T) {
	for _, transport := range []string{"http", "sse"} {
		t.Run(transport, func(t *testing.T) {
			w := newOAuthWorld(t, transport)
			seen := &signIns{}
			sup := New(Options{StartTimeout: 20 * time.Second, Authorize: followAuthURL(seen)})
			defer sup.Close()
			comp := w.component(transport)
			undo, err := sup.Start(context.Background(), comp)
			if err != nil {
				t.Fatal(err)
			}
			defer undo()
			if got := toolNames(sup.Tools()); len(got) != 1 || got[0] != "mcp__plugin_slack_slack__post" {
				t.Fatalf("tools = %v", got)
			}
			res, err := sup.CallTool(context.Background(), "mcp__plugin_slack_slack__post", nil)
			if err != nil || text(t, res) != "posted" {
				t.Fatalf("%v %+v", err, res)
			}
			if seen := seen.get(); len(seen) != 1 || seen[0] != comp.Name {
				t.Fatalf("Authorize called for %v, want once for %s", seen, comp.Name)
			}
			// A restart keeps the token (in memory): no second sign-in.
			if st, err := sup.Restart(context.Background(), comp.Name); err != nil || st.State != StateRunning {
				t.Fatalf("restart: %v %+v", err, st)
			}
			if n := len(seen.get()); n != 1 {
				t.Fatalf("Authorize called %d times after a restart, want 1", n)
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if want := "http://localhost:" + strconv.Itoa(w.port) + "/callback"; w.redirect != want {
				t.Fatalf("redirect_uri = %q, want %q", w.redirect, want)
			}
			if len(w.tokenClients) != 1 {
				t.Fatalf("token requests with client id %s: %d, want 1", w.clientID, len(w.tokenClients))
			}
		})
	}
}

func TestOAuthWithoutAuthorize(t *testing.T) {
	w := newOAuthWorld(t, "http")
	sup := New(Options{StartTimeout: 20 * time.Second})
	defer sup.Close()
	comp := w.component("http")
	undo, err := sup.Start(context.Background(), comp)
	defer undo()
	t.Log(err)
	if !errors.Is(err, ErrSignInRequired) {
		t.Fatalf("start = %v, want ErrSignInRequired", err)
	}
	st, _ := status(sup, comp.Name)
	if st.State != StateFailed || !strings.Contains(st.Error, comp.Name) || !strings.Contains(st.Error, "needs a sign-in") {
		t.Fatalf("status = %+v", st)
	}
	if len(sup.Tools()) != 0 {
		t.Fatal("tools of a server that did not sign in")
	}
}

func TestOAuthConfigErrors(t *testing.T) {
	for _, raw := range []string{`{"clientId": 5}`, `{"clientId": "x", "callbackPort": 70000}`, `[1]`} {
		if _, err := parseOAuth(json.RawMessage(raw)); err == nil || !strings.Contains(err.Error(), "oauth") {
			t.Errorf("parseOAuth(%s) = %v, want an error naming \"oauth\"", raw, err)
		}
	}
	sup := New(Options{StartTimeout: 5 * time.Second})
	defer sup.Close()
	comp := agent.Component{Kind: plugin.KindMCPServer, Name: "plugin:x:y", Source: agent.SourcePlugin,
		MCP: &plugin.MCPServer{Type: "http", URL: "http://127.0.0.1:1/mcp", Extra: map[string]json.RawMessage{"oauth": json.RawMessage(`{"clientId": true}`)}}}
	undo, err := sup.Start(context.Background(), comp)
	defer undo()
	if err == nil || !strings.Contains(err.Error(), `"oauth" in .mcp.json`) {
		t.Fatalf("start = %v", err)
	}
}
