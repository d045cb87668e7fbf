package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"syscall"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/plugin"
)

// APIError is the one error shape the server writes:
//
//	{"error": {"status": 412, "code": "version-conflict", "message": "...", "hint": "...", "layer": "intent", "field": "..."}}
//
// Handlers return it (or any error; unknown errors become 500 without
// leaking their text) and errorHandler writes it.
type APIError struct {
	Status  int    `json:"status"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// Hint is the caller's next step, apart from the message (which says
	// only what was refused).
	Hint string `json:"hint,omitempty"`
	// Layer is where the failure is ("intent", "policy", "trust", ...),
	// when the server knows it; clients map it to their exit codes.
	Layer string `json:"layer,omitempty"`
	// Field names the offending input: a JSON field path ("plugins[2]"), a
	// header ("If-Match") or a query parameter ("since").
	Field string `json:"field,omitempty"`
	// Current is set on 412 version conflicts: the version the client must
	// send in If-Match to overwrite what it has now seen.
	Current string `json:"current,omitempty"`
	// RetryAfter (seconds) is set on 429.
	RetryAfter int `json:"retryAfter,omitempty"`

	cause error
}

func (e *APIError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%d %s: %s (%s)", e.Status, e.Code, e.Message, e.Field)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

func (e *APIError) Unwrap() error { return e.cause }

// Error codes, stable for clients.
const (
	CodeBadRequest         = "bad-request"
	CodeMalformedJSON      = "malformed-json"
	CodeUnknownField       = "unknown-field"
	CodeInvalidField       = "invalid-field"
	CodeUnauthorized       = "unauthorized"
	CodeForbidden          = "forbidden"
	CodeNotFound           = "not-found"
	CodeMethodNotAllowed   = "method-not-allowed"
	CodeConflict           = "conflict"
	CodeVersionConflict    = "version-conflict"
	CodePreconditionNeeded = "precondition-required"
	CodeTooLarge           = "body-too-large"
	CodeUnsupportedMedia   = "unsupported-media-type"
	CodeRateLimited        = "rate-limited"
	CodeUpstream           = "upstream-error"
	CodeUnavailable        = "unavailable"
	CodeTimeout            = "timeout"
	CodeNoSpace            = "insufficient-storage"
	CodeStoreDamaged       = "store-damaged"
	CodeInternal           = "internal"
)

func apiErr(status int, code, field, format string, args ...any) *APIError {
	return &APIError{Status: status, Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// hintToken is the next step after a 401: the credential must change.
const hintToken = "send a valid token (wharf: --token or WHARF_TOKEN); an admin of this server creates one with: wharf token create"

// withHint sets e's hint.
func withHint(e *APIError, hint string) *APIError {
	e.Hint = hint
	return e
}

func badField(field, format string, args ...any) *APIError {
	return apiErr(http.StatusBadRequest, CodeInvalidField, field, format, args...)
}

// toAPIError maps any error to the one shape. *plugin.Error types decide the
// status so that packages below api never need to know about HTTP.
func toAPIError(err error) *APIError {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg := http.StatusText(he.Code)
		if s, ok := he.Message.(string); ok && s != "" {
			msg = s
		}
		code := CodeBadRequest
		switch he.Code {
		case http.StatusNotFound:
			code, msg = CodeNotFound, "no such route; see /v1 routes in docs/openapi.yaml"
		case http.StatusMethodNotAllowed:
			code = CodeMethodNotAllowed
		case http.StatusRequestEntityTooLarge:
			code = CodeTooLarge
		case http.StatusUnsupportedMediaType:
			code = CodeUnsupportedMedia
		}
		if he.Code >= 500 {
			code, msg = CodeInternal, "internal error"
		}
		return &APIError{Status: he.Code, Code: code, Message: msg, cause: err}
	}
	var pe *plugin.Error
	if errors.As(err, &pe) {
		msg := ""
		if pe.Err != nil {
			msg = pe.Err.Error()
		}
		if pe.Object != "" && !strings.Contains(msg, pe.Object) {
			msg = pe.Object + ": " + msg
		}
		status := http.StatusUnprocessableEntity
		code := pe.Type
		switch pe.Type {
		case plugin.TypeNotFound:
			status = http.StatusNotFound
		case plugin.TypeConflict:
			status = http.StatusConflict
		case plugin.TypeInvalidID, plugin.TypeManifestInvalid, plugin.TypeManifestParse:
			status = http.StatusBadRequest
		case plugin.TypeSource:
			status = http.StatusBadGateway
		case plugin.TypePolicyDenied:
			status = http.StatusForbidden
		}
		if code == "" {
			code = CodeBadRequest
		}
		return &APIError{Status: status, Code: code, Message: msg, Hint: plugin.HintOf(err), Layer: string(pe.Layer), Field: pe.Object, cause: err}
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return &APIError{Status: http.StatusNotFound, Code: CodeNotFound, Message: "not found", cause: err}
	case errors.Is(err, store.ErrConflict):
		return &APIError{Status: http.StatusConflict, Code: CodeConflict, Message: err.Error(), cause: err}
	case errors.Is(err, errDeadline):
		return &APIError{Status: http.StatusServiceUnavailable, Code: CodeTimeout, Message: "the request took too long; retry later", cause: err}
	}
	return &APIError{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error; the server log has the details", cause: err}
}

var errDeadline = errors.New("request deadline exceeded")

// storeError names what an admin must do about a failure of the store
// itself: a full disk is 507 naming the data directory, an etcd cluster
// over its space quota 507 naming what frees it, a damaged file 503
// naming the repair command. Other errors are returned as they are.
func (s *Server) storeError(err error) error {
	where := "the server's store"
	if s.deps.DataDir != "" {
		where = "the data directory " + s.deps.DataDir
	}
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return &APIError{Status: http.StatusInsufficientStorage, Code: CodeNoSpace, cause: err,
			Message: fmt.Sprintf("%s is out of space: this request's change was not saved; free space there (or move the data to a larger disk) and retry", where)}
	case errors.Is(err, store.ErrNoSpace):
		return withHint(&APIError{Status: http.StatusInsufficientStorage, Code: CodeNoSpace, cause: err,
			Message: "the etcd cluster's space quota is used up (mvcc: database space exceeded): this request's change was not saved"},
			"an admin of the etcd cluster compacts and defragments it and disarms its NOSPACE alarm (etcdctl compact, etcdctl defrag, etcdctl alarm disarm), or raises its --quota-backend-bytes; then retry")
	case errors.Is(err, store.ErrCorrupt):
		msg := where + " holds a damaged store file; the server cannot read it"
		if s.deps.DataDir != "" {
			msg += "; stop the server and run: wharf-server repair --data " + s.deps.DataDir
		}
		return &APIError{Status: http.StatusServiceUnavailable, Code: CodeStoreDamaged, Message: msg, cause: err}
	}
	return err
}

// errorHandler is echo's HTTPErrorHandler: the one place that logs and writes
// errors.
func (s *Server) errorHandler(err error, c echo.Context) {
	ae := toAPIError(s.storeError(err))
	if ae.Status >= 500 {
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
	if c.Response().Committed {
		return
	}
	if ae.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(ae.RetryAfter))
	}
	var werr error
	if c.Request().Method == http.MethodHead {
		werr = c.NoContent(ae.Status)
	} else {
		werr = c.JSON(ae.Status, map[string]*APIError{"error": ae})
	}
	if werr != nil {
		s.log.Debug("write error response", "err", werr)
	}
}
