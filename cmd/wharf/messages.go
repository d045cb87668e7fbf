package main

import "github.com/wharfhq/wharf/internal/cli/shell"

// plainMessage is an error message as a person should read it
// (shell.PlainMessage): without layer names or repeated segments.
func plainMessage(msg string) string { return shell.PlainMessage(msg) }

// shown marks err as already printed on stdout; nil stays nil.
func shown(err error) error { return shell.Shown(err) }
