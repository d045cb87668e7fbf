package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/wharfhq/wharf/internal/client/collect"
	"github.com/wharfhq/wharf/internal/core/inventory"
)

// agentFrom are the --from values agentReport reads.
var agentFrom = map[string]bool{"copilot": true, "codex": true, "gemini": true}

// addAgentReportFlags adds the flags of `wharf inventory report --from
// copilot|codex|gemini`.
func addAgentReportFlags(f *pflag.FlagSet, o *reportOptions) {
	f.StringVar(&o.copilotHome, "copilot-home", "", "with --from copilot: Copilot CLI's directory (default $COPILOT_HOME, else ~/.copilot)")
	f.StringVar(&o.codexHome, "codex-home", "", "with --from codex: Codex's directory (default $CODEX_HOME, else ~/.codex)")
	f.StringVar(&o.geminiHome, "gemini-home", "", "with --from gemini: Gemini CLI's directory (default ~/.gemini)")
}

func checkAgentReportFlags(o *reportOptions) error {
	if o.copilotHome != "" && o.from != "copilot" {
		return usageError(errors.New("--copilot-home needs --from copilot"))
	}
	if o.codexHome != "" && o.from != "codex" {
		return usageError(errors.New("--codex-home needs --from codex"))
	}
	if o.geminiHome != "" && o.from != "gemini" {
		return usageError(errors.New("--gemini-home needs --from gemini"))
	}
	return nil
}

// agentReport is the report of a Copilot CLI, Codex or Gemini CLI home, under the
// machine id kept in that home.
func agentReport(io streams, o *reportOptions) (inventory.Report, error) {
	dir, envVar, dot, flag, kind := o.copilotHome, "COPILOT_HOME", ".copilot", "--copilot-home", inventory.KindCopilot
	switch o.from {
	case "codex":
		dir, envVar, dot, flag, kind = o.codexHome, "CODEX_HOME", ".codex", "--codex-home", inventory.KindCodex
	case "gemini":
		// Gemini CLI has no variable for its directory: ~/.gemini.
		dir, envVar, dot, flag, kind = o.geminiHome, "", ".gemini", "--gemini-home", inventory.KindGemini
	}
	if dir == "" {
		d, err := collect.DefaultAgentDir(os.Getenv, envVar, dot)
		if err != nil {
			return inventory.Report{}, usageError(fmt.Errorf("cannot find the %s home: %w; pass %s", o.from, err, flag))
		}
		dir = d
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return inventory.Report{}, usageError(err)
	}
	var plugins []inventory.Plugin
	var warns []string
	switch kind {
	case inventory.KindCopilot:
		plugins, warns, err = collect.Copilot{Dir: abs}.Read()
	case inventory.KindCodex:
		plugins, warns, err = collect.Codex{Dir: abs}.Read()
	default:
		plugins, warns, err = collect.Gemini{Dir: abs}.Read()
	}
	if err != nil {
		return inventory.Report{}, err
	}
	for _, w := range warns {
		io.warnf("%s: %s", o.from, w)
	}
	id, err := collect.MachineID(filepath.Join(abs, collect.ClaudeMachineIDFile))
	if err != nil {
		return inventory.Report{}, err
	}
	return collect.New(collect.Machine(id), kind, plugins, time.Now()), nil
}
