package apiclient

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
)

// Each status and body shape a client meets decodes to one *APIError whose
// message names the server and never holds the raw body.
func TestDecode(t *testing.T) {
	const srv = "http://wharf.example"
	for _, tt := range []struct {
		name        string
		status      int
		ctype, body string
		header      http.Header
		wantCode    string
		wantLayer   string
		wantCreds   bool
		wantMsg     []string // substrings of Error()
		wantHint    string   // substring
		notWharf    bool
	}{
		{name: "401 envelope with hint", status: 401, ctype: "application/json",
			body:     `{"error":{"status":401,"code":"unauthorized","message":"the bearer token is unknown or was revoked","hint":"send a valid token","field":"Authorization"}}`,
			wantCode: "unauthorized", wantLayer: LayerIntent, wantCreds: true,
			wantMsg:  []string{"wharf server " + srv + " refused the credentials (401 unauthorized): the bearer token is unknown or was revoked (Authorization)"},
			wantHint: "send a valid token"},
		{name: "401 envelope without hint", status: 401, body: `{"error":{"status":401,"code":"unauthorized","message":"no bearer token"}}`,
			wantCode: "unauthorized", wantLayer: LayerIntent, wantCreds: true, wantMsg: []string{"refused the credentials", "no bearer token"}, wantHint: "WHARF_TOKEN"},
		{name: "403 role", status: 403, body: `{"error":{"status":403,"code":"forbidden","message":"role \"agent\" may not GET /v1/tokens"}}`,
			wantCode: "forbidden", wantLayer: LayerIntent, wantCreds: true, wantMsg: []string{"refused the credentials (403 forbidden)", `role "agent"`}, wantHint: "wharf token create"},
		{name: "403 policy", status: 403, body: `{"error":{"status":403,"code":"policy-denied","message":"blocked by policy","layer":"policy","hint":"ask the admin"}}`,
			wantCode: "policy-denied", wantLayer: LayerPolicy, wantMsg: []string{"answered 403 policy-denied: blocked by policy"}, wantHint: "ask the admin"},
		{name: "404", status: 404, body: `{"error":{"status":404,"code":"not-found","message":"no channel \"x\""}}`,
			wantCode: "not-found", wantLayer: LayerIntent, wantMsg: []string{"answered 404 not-found: no channel"}, wantHint: "server's URL"},
		{name: "409 with current", status: 409, body: `{"error":{"status":409,"code":"version-conflict","message":"changed","current":"v7","layer":"intent"}}`,
			wantCode: "version-conflict", wantLayer: LayerIntent, wantMsg: []string{"409 version-conflict: changed"}},
		{name: "429 header", status: 429, header: http.Header{"Retry-After": {"17"}}, body: `{"error":{"status":429,"code":"rate-limited","message":"slow down"}}`,
			wantCode: "rate-limited", wantLayer: LayerMaterialization, wantMsg: []string{"429 rate-limited"}, wantHint: "retry in 17 seconds"},
		{name: "500", status: 500, body: `{"error":{"status":500,"code":"internal","message":"internal error"}}`,
			wantCode: "internal", wantLayer: LayerMaterialization, wantMsg: []string{"500 internal"}, wantHint: "retry later"},
		{name: "unknown layer", status: 422, body: `{"error":{"status":422,"code":"x","message":"m","layer":"galaxy"}}`,
			wantCode: "x", wantLayer: LayerIntent, wantMsg: []string{"422 x: m"}},
		{name: "trust layer", status: 422, body: `{"error":{"status":422,"code":"trust-rejected","message":"bad digest","layer":"trust"}}`,
			wantCode: "trust-rejected", wantLayer: LayerTrust, wantMsg: []string{"bad digest"}},
		{name: "proxy html 502", status: 502, ctype: "text/html", body: "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
			wantLayer: LayerMaterialization, wantMsg: []string{"answered 502 bad gateway: an HTML page"}, wantHint: "wharf server", notWharf: true},
		{name: "html 401 login page", status: 401, body: "<!doctype html><form>sign in</form>",
			wantLayer: LayerIntent, wantCreds: true, wantMsg: []string{"refused the credentials (401 unauthorized): an HTML page"}, wantHint: "WHARF_TOKEN", notWharf: true},
		{name: "plain text", status: 503, ctype: "text/plain", body: "upstream connect error\nsecond line",
			wantLayer: LayerMaterialization, wantMsg: []string{`"upstream connect error"`}, notWharf: true},
		{name: "truncated envelope", status: 400, body: `{"error":{"status":400,"code":"invalid-field","message":"plug`,
			wantLayer: LayerIntent, wantMsg: []string{"truncated or malformed JSON"}, notWharf: true},
		{name: "json not envelope", status: 400, body: `{"message":"x"}`,
			wantLayer: LayerIntent, wantMsg: []string{"JSON that is not a wharf error"}, notWharf: true},
		{name: "empty", status: 502, body: "",
			wantLayer: LayerMaterialization, wantMsg: []string{"an empty answer"}, notWharf: true},
		{name: "envelope with empty message", status: 400, body: `{"error":{"status":400,"code":"x","message":""}}`,
			wantLayer: LayerIntent, wantMsg: []string{"JSON that is not a wharf error"}, notWharf: true},
		{name: "escape sequences", status: 400, body: "{\"error\":{\"status\":400,\"code\":\"x\",\"message\":\"a\\u001b[31mred\"}}",
			wantCode: "x", wantLayer: LayerIntent, wantMsg: []string{"a [31mred"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.header
			if h == nil {
				h = http.Header{}
			}
			if tt.ctype != "" {
				h.Set("Content-Type", tt.ctype)
			}
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range h {
					w.Header()[k] = v
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer hs.Close()
			resp, err := http.Get(hs.URL + "/v1/x")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			derr := Decode(resp)
			var e *APIError
			if !errors.As(derr, &e) {
				t.Fatalf("Decode = %v, want *APIError", derr)
			}
			if e.Server != hs.URL || e.Status != tt.status || e.Code != tt.wantCode || e.Layer != tt.wantLayer ||
				e.CredentialsRefused() != tt.wantCreds || e.NotWharf != tt.notWharf {
				t.Errorf("got %+v (creds %v)", e, e.CredentialsRefused())
			}
			msg := strings.ReplaceAll(e.Error(), hs.URL, srv)
			for _, w := range tt.wantMsg {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			if !strings.Contains(e.Hint, tt.wantHint) {
				t.Errorf("hint %q lacks %q", e.Hint, tt.wantHint)
			}
			if tt.body != "" && strings.Contains(msg, tt.body) || strings.Contains(msg, `{"error"`) || strings.Contains(msg, "<html") {
				t.Errorf("message prints the raw body: %q", msg)
			}
			if strings.ContainsRune(msg, 0x1b) {
				t.Errorf("message holds an escape character: %q", msg)
			}
		})
	}
	// Below 400 nothing is an error.
	if err := Decode(&http.Response{StatusCode: 304}); err != nil {
		t.Errorf("304 decoded as %v", err)
	}
}

// A body far larger than an error needs is read only up to MaxErrorBody.
func TestDecodeReadsABoundedBody(t *testing.T) {
	big := strings.NewReader(`{"error":{"status":500,"code":"internal","message":"` + strings.Repeat("x", 4*MaxErrorBody) + `"}}`)
	resp := &http.Response{StatusCode: 500, Header: http.Header{}, Body: io.NopCloser(big)}
	e := Decode(resp).(*APIError)
	if !e.NotWharf || !strings.Contains(e.Message, "truncated") {
		t.Errorf("oversized body: %+v", e)
	}
	if big.Len() != 3*MaxErrorBody+len(`"}}`)+len(`{"error":{"status":500,"code":"internal","message":"`) {
		t.Errorf("Decode read %d bytes too many", 4*MaxErrorBody-big.Len())
	}
}

// A server that does not answer is an *UnreachableError naming the server
// and the cause, not the route (which differs between commands).
func TestSendUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ln.Close()
	c, err := New(base+"/", "tok", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Send(context.Background(), Request{Method: http.MethodGet, Path: "/v1/tokens"})
	var ue *UnreachableError
	if !errors.As(err, &ue) || !IsUnreachable(err) || ue.Server != base {
		t.Fatalf("got %v", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "wharf server "+base+" is unreachable: ") || strings.Contains(msg, "/v1/tokens") {
		t.Errorf("message %q", msg)
	}
}

// Send carries the token, decodes refusals and bounds answers.
func TestSend(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Authorization") != "Bearer good":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			_, _ = io.WriteString(w, `{"error":{"status":401,"code":"unauthorized","message":"no"}}`)
		case r.URL.Path == "/big":
			_, _ = io.WriteString(w, strings.Repeat("a", 100))
		default:
			_, _ = io.WriteString(w, `{"ok":true}`)
		}
	}))
	defer hs.Close()
	ctx := context.Background()
	good, _ := New(hs.URL, "good", nil)
	var out struct{ OK bool }
	if err := good.Do(ctx, http.MethodGet, "/x", nil, &out); err != nil || !out.OK {
		t.Fatalf("Do: %v %+v", err, out)
	}
	var tl *TooLargeError
	if _, err := good.Send(ctx, Request{Method: http.MethodGet, Path: "/big", Limit: 10}); !errors.As(err, &tl) || !strings.Contains(err.Error(), "more than 10 bytes") {
		t.Errorf("over the limit: %v", err)
	}
	bad, _ := New(hs.URL, "bad", nil)
	var ae *APIError
	if err := bad.Do(ctx, http.MethodGet, "/x", nil, &out); !errors.As(err, &ae) || !ae.CredentialsRefused() || ae.Server != hs.URL {
		t.Errorf("bad token: %v", err)
	}
	for _, u := range []string{"", "ftp://h", "http://", "http://h/?q=1", "http://u:p@h", "://"} {
		if _, err := New(u, "", nil); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
}

// Decode never panics, always names the server and status, and never lets
// a control character or the raw envelope through.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"error":{"status":401,"code":"unauthorized","message":"m","hint":"h","layer":"intent","field":"Authorization"}}`,
		`{"error":{"status":403,"code":"policy-denied","message":"m","layer":"policy"}}`,
		`{"error":{"message":"` + "\x1b[2J" + `"}}`,
		`{"error":null}`, `{"error":{"message":1}}`, `{"error":{"message":"x","retryAfter":-5}}`,
		`<html>`, ``, "plain\ntext", `{"error":{"status":4`, "\xff\xfe",
	} {
		f.Add(401, "application/json", s)
		f.Add(502, "text/html", s)
	}
	f.Fuzz(func(t *testing.T, status int, ctype, body string) {
		if status < 400 || status > 599 {
			status = 400 + (status%200+200)%200
		}
		e := DecodeBody("http://s", status, http.Header{"Content-Type": {ctype}, "Retry-After": {"3"}}, []byte(body))
		msg := e.Error()
		if e.Status != status || !strings.HasPrefix(msg, "wharf server http://s ") || e.Layer == "" || e.RetryAfter < 0 {
			t.Fatalf("decoded %+v: %q", e, msg)
		}
		for _, r := range msg + e.Hint {
			if unicode.IsControl(r) {
				t.Fatalf("control character in %q / %q", msg, e.Hint)
			}
		}
		if len(body) > 20 && strings.HasPrefix(body, "{") && strings.Contains(msg, body) {
			t.Fatalf("raw envelope printed: %q", msg)
		}
	})
}
