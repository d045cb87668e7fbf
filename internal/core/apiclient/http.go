package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Layers an APIError can name: the words of wharf's error layers, so that a
// client maps them to its exit codes.
const (
	LayerIntent          = "intent"
	LayerMaterialization = "materialization"
	LayerActive          = "active"
	LayerTrust           = "trust"
	LayerPolicy          = "policy"
	LayerDependency      = "dependency"
)

// DefaultMaxBody bounds an answer's body when a Request sets no Limit.
const DefaultMaxBody = 8 << 20

// MaxErrorBody bounds what Decode reads of an error answer.
const MaxErrorBody = 64 << 10

// HintCredentials is the next step after the server refused the
// credentials (401, or 403 for a token whose role may not do this), when
// the server names none.
const HintCredentials = "set a valid token with --token or WHARF_TOKEN; an admin of the server creates one with: wharf token create --role <role>"

// APIError is a wharf server's error answer as the one decoder (Decode)
// reads it: every client of the server reports a refusal through it, so
// the same answer reads the same, with the same hint, wherever it comes
// from. The server writes
//
//	{"error": {"status": 401, "code": "unauthorized", "message": "...", "hint": "...", "layer": "intent", "field": "..."}}
type APIError struct {
	// Server is the base URL the request went to.
	Server string `json:"server"`
	// Status is the HTTP status.
	Status int `json:"status"`
	// Code is the server's stable error code ("unauthorized"); "" when
	// the answer was not a wharf error envelope.
	Code string `json:"code,omitempty"`
	// Message says what was refused (never the raw body of the answer).
	Message string `json:"message"`
	// Hint is the next step: the server's, else the one this package
	// gives for the status.
	Hint string `json:"hint,omitempty"`
	// Layer is where the failure is: the server's, else LayerIntent for
	// a request the caller must change (4xx but 408 and 429) and
	// LayerMaterialization otherwise.
	Layer string `json:"layer"`
	// Field names the offending input, when the server names one.
	Field string `json:"field,omitempty"`
	// Current is the current version on a version conflict.
	Current string `json:"current,omitempty"`
	// RetryAfter (seconds) is set on 429 and some 503s.
	RetryAfter int `json:"retryAfter,omitempty"`
	// NotWharf is set when the body was not a wharf error envelope (a
	// proxy's page, plain text, an empty or truncated body).
	NotWharf bool `json:"notWharf,omitempty"`
}

// CredentialsRefused reports whether the server refused the credentials:
// a 401, or a 403 that is not a policy decision (the token's role, the
// machine's owner or the token's quota).
func (e *APIError) CredentialsRefused() bool {
	return e.Status == http.StatusUnauthorized || (e.Status == http.StatusForbidden && e.Layer != LayerPolicy)
}

func (e *APIError) Error() string {
	var b strings.Builder
	if e.CredentialsRefused() {
		fmt.Fprintf(&b, "wharf server %s refused the credentials (%d", e.Server, e.Status)
	} else {
		fmt.Fprintf(&b, "wharf server %s answered %d", e.Server, e.Status)
	}
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	} else if t := http.StatusText(e.Status); t != "" {
		b.WriteString(" " + strings.ToLower(t))
	}
	if e.CredentialsRefused() {
		b.WriteString(")")
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Field != "" && !strings.Contains(e.Message, e.Field) {
		b.WriteString(" (" + e.Field + ")")
	}
	return b.String()
}

// UnreachableError is a request that got no answer: the connection failed
// or broke before the answer was read.
type UnreachableError struct {
	Server string
	Err    error
}

func (e *UnreachableError) Error() string {
	cause := e.Err
	var ue *url.Error
	if errors.As(cause, &ue) {
		// The route differs between commands; the server and the cause do not.
		cause = ue.Err
	}
	return fmt.Sprintf("wharf server %s is unreachable: %v", e.Server, cause)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Hint says what to do about a server that does not answer.
func (e *UnreachableError) Hint() string {
	return "check the server's URL and that wharf-server is running there"
}

// TooLargeError is an answer larger than the request's Limit.
type TooLargeError struct {
	Server string
	Path   string
	Limit  int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("wharf server %s answered %s with more than %d bytes", e.Server, e.Path, e.Limit)
}

// Decode reads the error answer resp (status 400 or more) into an
// *APIError; it returns nil for a status below 400. It reads at most
// MaxErrorBody bytes of the body and closes nothing: the caller owns resp.
// The server is resp.Request's scheme and host.
func Decode(resp *http.Response) error {
	if resp == nil || resp.StatusCode < 400 {
		return nil
	}
	server := ""
	if resp.Request != nil && resp.Request.URL != nil {
		server = resp.Request.URL.Scheme + "://" + resp.Request.URL.Host
	}
	var body []byte
	if resp.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
	}
	return DecodeBody(server, resp.StatusCode, resp.Header, body)
}

// DecodeBody is Decode over an answer already read.
func DecodeBody(server string, status int, header http.Header, body []byte) *APIError {
	var env struct {
		Error *APIError `json:"error"`
	}
	e := &APIError{}
	switch {
	case json.Unmarshal(body, &env) == nil && env.Error != nil && strings.TrimSpace(env.Error.Message) != "":
		e = env.Error
		e.NotWharf = false
		e.Message = clean(e.Message, 1000)
		e.Hint = clean(e.Hint, 1000)
		e.Code = clean(e.Code, 80)
		e.Field = clean(e.Field, 200)
		e.Current = clean(e.Current, 200)
	default:
		e.NotWharf = true
		e.Message = notWharf(header, body)
	}
	e.Server, e.Status = server, status
	if e.RetryAfter <= 0 {
		e.RetryAfter = 0
		if n, err := strconv.Atoi(strings.TrimSpace(header.Get("Retry-After"))); err == nil && n > 0 {
			e.RetryAfter = n
		}
	}
	switch e.Layer {
	case LayerIntent, LayerMaterialization, LayerActive, LayerTrust, LayerPolicy, LayerDependency:
	default:
		e.Layer = LayerMaterialization
		if status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests {
			e.Layer = LayerIntent
		}
	}
	if e.Hint == "" {
		e.Hint = defaultHint(e)
	}
	return e
}

// notWharf describes a body that is not a wharf error envelope, without
// printing it: at most its first line when it is short plain text.
func notWharf(header http.Header, body []byte) string {
	s := strings.TrimSpace(string(body))
	ct := strings.ToLower(header.Get("Content-Type"))
	switch {
	case s == "":
		return "an empty answer, not a wharf error (is a proxy in between?)"
	case strings.Contains(ct, "html") || strings.HasPrefix(s, "<"):
		return "an HTML page, not a wharf error (a proxy, a login page or another web server answers at this URL)"
	case strings.HasPrefix(s, "{") || strings.HasPrefix(s, "["):
		if !json.Valid(body) {
			return "a truncated or malformed JSON body, not a wharf error"
		}
		return "JSON that is not a wharf error (is this URL a wharf server?)"
	}
	return "a non-JSON answer, not a wharf error: " + strconv.Quote(clean(firstLine(s), 200))
}

func firstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	return s
}

// clean makes a server-sent string printable: valid UTF-8, no control
// characters (a terminal escape in an error message would reach the
// user's terminal), at most max bytes.
func clean(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > max {
		s = s[:max]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}

func defaultHint(e *APIError) string {
	switch {
	case e.Status == http.StatusForbidden && e.Code == "quota-exceeded":
		// A new machine id would count against the same quota.
		return "the token's inventory quota is used up; ask the server's admin for a token for this machine, or for a larger maxMachines or maxPlugins"
	case e.Status == http.StatusForbidden && e.Code == "machine-owned":
		return "report with the token this machine first reported with, or remove the machine-id file to report as a new machine"
	case e.CredentialsRefused():
		return HintCredentials
	case e.NotWharf:
		return "check the server's URL: it must name a wharf server (wharf-server), not a proxy or web page"
	case e.Status == http.StatusNotFound:
		return "check the server's URL and the name in the request"
	case e.Status == http.StatusTooManyRequests && e.RetryAfter > 0:
		return fmt.Sprintf("retry in %d seconds", e.RetryAfter)
	case e.Status == http.StatusTooManyRequests:
		return "retry later"
	case e.Status >= 500:
		return "retry later; the server's log has the details"
	}
	return ""
}

// Client talks to one wharf server.
type Client struct {
	// Base is the server's base URL, without a trailing slash.
	Base string
	// Token is sent as Authorization: Bearer; "" sends Source's token,
	// else none.
	Token string
	// Source gives the token when Token is "" (a signed-in user's,
	// refreshed when it expires); nil: none.
	Source TokenSource
	// HTTP is the client used; nil is http.DefaultClient.
	HTTP *http.Client
}

// TokenSource gives a bearer token for each request.
type TokenSource interface {
	Token(ctx context.Context) (string, error)
}

// New returns a Client of the server at base: an http(s) URL with a host
// and no query or fragment; a trailing slash is dropped.
func New(base, token string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("server URL %q is not http(s)://host[:port][/path]", base)
	}
	return &Client{Base: strings.TrimRight(u.String(), "/"), Token: token, HTTP: hc}, nil
}

// Request is one call of Client.Send.
type Request struct {
	Method string
	// Path is the route, "/v1/..." (already escaped).
	Path string
	// JSON, when not nil, is marshalled as the body.
	JSON any
	// Header holds further headers (If-None-Match, Accept).
	Header http.Header
	// Limit bounds the answer's body (default DefaultMaxBody).
	Limit int64
}

// Response is an answer below 400.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Send sends req. An answer of 400 or more is an *APIError (Decode); no
// answer is an *UnreachableError; an answer over the limit a *TooLargeError.
func (c *Client) Send(ctx context.Context, req Request) (*Response, error) {
	var body io.Reader
	if req.JSON != nil {
		raw, err := json.Marshal(req.JSON)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(raw)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, c.Base+req.Path, body)
	if err != nil {
		return nil, err
	}
	for k, v := range req.Header {
		hr.Header[k] = v
	}
	if req.JSON != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if hr.Header.Get("Accept") == "" {
		hr.Header.Set("Accept", "application/json")
	}
	token := c.Token
	if token == "" && c.Source != nil {
		if token, err = c.Source.Token(ctx); err != nil {
			return nil, err
		}
	}
	if token != "" {
		hr.Header.Set("Authorization", "Bearer "+token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(hr)
	if err != nil {
		return nil, &UnreachableError{Server: c.Base, Err: err}
	}
	defer res.Body.Close()
	if res.StatusCode >= 400 {
		raw, _ := io.ReadAll(io.LimitReader(res.Body, MaxErrorBody))
		return nil, DecodeBody(c.Base, res.StatusCode, res.Header, raw)
	}
	limit := req.Limit
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	raw, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		return nil, &UnreachableError{Server: c.Base, Err: err}
	}
	if int64(len(raw)) > limit {
		return nil, &TooLargeError{Server: c.Base, Path: req.Path, Limit: limit}
	}
	return &Response{Status: res.StatusCode, Header: res.Header, Body: raw}, nil
}

// Do sends a JSON request (in may be nil) and decodes a JSON answer into
// out (nil to ignore it).
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	res, err := c.Send(ctx, Request{Method: method, Path: path, JSON: in})
	if err != nil {
		return err
	}
	if out == nil || len(res.Body) == 0 {
		return nil
	}
	if err := json.Unmarshal(res.Body, out); err != nil {
		return fmt.Errorf("wharf server %s answered %s %s with something else than the JSON expected: %w", c.Base, method, path, err)
	}
	return nil
}

// IsUnreachable reports whether err is a request that got no answer.
func IsUnreachable(err error) bool {
	var u *UnreachableError
	return errors.As(err, &u)
}
