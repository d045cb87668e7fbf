package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wharfhq/wharf/plugin"
)

// printJSON writes v to stdout as indented JSON.
func (a *app) printJSON(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := a.stdout.Write(buf.Bytes())
	return err
}

// printf writes human output to stdout.
func (a *app) printf(format string, args ...any) {
	fmt.Fprintf(a.stdout, format, args...)
}

// jsonError is the shape of an error under --json, written to stderr.
type jsonError struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Hint    string `json:"hint,omitempty"`
		// Layer is where the failure is (intent, policy, trust, ...),
		// the class the exit code follows; the message does not repeat it.
		Layer string `json:"layer,omitempty"`
	} `json:"error"`
}

// printError writes err to stderr: "wharf: <message>" and "Try: <hint>", or
// the JSON object under --json.
func (a *app) printError(err error) {
	hint := plugin.HintOf(err)
	if a.cfg.JSON {
		var je jsonError
		je.Error.Type = errorType(err)
		je.Error.Message = plainMessage(err.Error())
		je.Error.Hint = hint
		je.Error.Layer = string(plugin.LayerOf(err))
		enc := json.NewEncoder(a.stderr)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(je)
		return
	}
	var se shownError
	if errors.As(err, &se) {
		return
	}
	fmt.Fprintf(a.stderr, "wharf: %s\n", plainMessage(err.Error()))
	if hint != "" {
		fmt.Fprintf(a.stderr, "Try: %s\n", hint)
	}
}
