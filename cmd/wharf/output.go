package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/wharfhq/wharf/internal/cli/shell"
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

// printError writes err to stderr: "wharf: <message>" and "Try: <hint>", or
// the JSON object under --json.
func (a *app) printError(err error) { shell.PrintError(a.stderr, "wharf", a.cfg.JSON, err) }
