package main

import "path/filepath"

// Env is WHARF_HOME and the paths under it, one method per path, so no
// command builds a path by hand.
type Env struct {
	home string
}

// Home is the root of wharf's state (WHARF_HOME, default ~/.wharf).
func (e Env) Home() string { return e.home }

// StateDB is the bbolt file: known marketplaces, installed registry, trust pins.
func (e Env) StateDB() string { return filepath.Join(e.home, "state.db") }

// Marketplaces holds one clone (or downloaded catalog) per marketplace.
func (e Env) Marketplaces() string { return filepath.Join(e.home, "marketplaces") }

// Cache holds versioned plugin dirs: cache/<marketplace>/<plugin>/<version>/.
func (e Env) Cache() string { return filepath.Join(e.home, "cache") }

// PolicyMemo keeps the policy decisions of the policy version in force
// between commands, so a command whose every decision is known compiles no
// Rego.
func (e Env) PolicyMemo() string { return filepath.Join(e.home, "policy-decisions.memo") }

// Settings is the user-scope settings file.
func (e Env) Settings() string { return filepath.Join(e.home, "settings.json") }
