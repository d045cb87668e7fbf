package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// decodeBody reads the request body (bounded by the body-limit middleware)
// into v with unknown fields refused, and turns every decoding failure into
// a 400 that names the field or the line and column.
func decodeBody(c echo.Context, v any) error {
	req := c.Request()
	if ct := req.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return apiErr(http.StatusUnsupportedMediaType, CodeUnsupportedMedia, "Content-Type",
				"Content-Type %q is not JSON; send application/json", ct)
		}
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apiErr(http.StatusRequestEntityTooLarge, CodeTooLarge, "",
				"request body is larger than %d bytes", mbe.Limit)
		}
		return apiErr(http.StatusBadRequest, CodeBadRequest, "", "reading request body: %v", err)
	}
	return decodeJSON(body, v)
}

// decodeJSON is the strict decoder behind decodeBody, kept apart so that it
// can be fuzzed without HTTP.
func decodeJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return apiErr(http.StatusBadRequest, CodeMalformedJSON, "", "request body is empty; send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(body, dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		line, col := lineCol(body, dec.InputOffset())
		return apiErr(http.StatusBadRequest, CodeMalformedJSON, "",
			"unexpected data after the JSON value at line %d, column %d; send exactly one JSON object", line, col)
	}
	return nil
}

func jsonError(body []byte, dec *json.Decoder, err error) *APIError {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// Offset counts the offending byte itself.
		line, col := lineCol(body, se.Offset-1)
		return apiErr(http.StatusBadRequest, CodeMalformedJSON, "",
			"malformed JSON at line %d, column %d: %s", line, col, strings.TrimPrefix(se.Error(), "json: "))
	case errors.Is(err, io.ErrUnexpectedEOF):
		line, col := lineCol(body, int64(len(body)))
		return apiErr(http.StatusBadRequest, CodeMalformedJSON, "",
			"malformed JSON: the body ends early at line %d, column %d", line, col)
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "(body)"
		}
		return apiErr(http.StatusBadRequest, CodeInvalidField, field,
			"field %q: expected %s, got JSON %s", field, te.Type.String(), te.Value)
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return apiErr(http.StatusBadRequest, CodeUnknownField, name,
			"unknown field %q; see docs/openapi.yaml for the fields this request takes", name)
	}
	// Errors from UnmarshalJSON/UnmarshalText methods (e.g. a bad plugin id)
	// carry their own message; the decoder's offset points just past the value.
	line, col := lineCol(body, dec.InputOffset())
	return apiErr(http.StatusBadRequest, CodeInvalidField, "",
		"invalid value near line %d, column %d: %s", line, col, strings.TrimPrefix(msg, "json: "))
}

// lineCol converts a byte offset into 1-based line and column.
func lineCol(body []byte, off int64) (int, int) {
	if off > int64(len(body)) {
		off = int64(len(body))
	}
	if off < 0 {
		off = 0
	}
	prefix := body[:off]
	line := bytes.Count(prefix, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(prefix, '\n')
	if col < 1 {
		col = 1
	}
	return line, col
}
