package main

import (
	"github.com/wharfhq/wharf/internal/cli/shell"
	"github.com/wharfhq/wharf/internal/client/load"
)

// plainMessage is an error message as a person should read it
// (shell.PlainMessage): without layer names or repeated segments.
func plainMessage(msg string) string { return shell.PlainMessage(msg) }

// shown marks err as already printed on stdout; nil stays nil.
func shown(err error) error { return shell.Shown(err) }

// rowNote is how `wharf list` and `wharf agent status` show one error of a
// plugin's row: its message, and for a plugin that is enabled but not
// installed the command that installs it.
func rowNote(d load.ErrorDetail) string {
	s := plainMessage(d.Message)
	if d.Type == load.TypeNotInstalled && d.Hint != "" {
		s += "; " + d.Hint
	}
	return s
}
