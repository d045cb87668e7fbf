package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testutil/claudetest"
	"github.com/wharfhq/wharf/internal/testutil/sharedtest"
	"github.com/wharfhq/wharf/plugin"
)

// Verdicts of a validation: an error, warnings only, or nothing.
const (
	verdictPass  = "pass"
	verdictWarn  = "warn"
	verdictError = "error"
)

// validateCases are the minimal cases of testdata/validate, each with
// Claude Code 2.1.332's verdict (plugin directory findings aside, as
// Claude Code prints them apart) and its verdict under --profile directory
// ("" where the case is a marketplace). Under the profile claude says only
// pass or fail, so warnings count as a pass there.
var validateCases = map[string]struct{ verdict, profile string }{
	"agent-invalid-yaml":         {verdictError, verdictError},
	"skill-invalid-yaml":         {verdictError, verdictError},
	"yaml-claude-reads":          {verdictPass, verdictPass},
	"command-no-frontmatter":     {verdictWarn, verdictPass},
	"claude-md-at-root":          {verdictWarn, verdictPass},
	"hook-unquoted-root":         {verdictWarn, verdictPass},
	"hook-quoted-root":           {verdictPass, verdictPass},
	"manifest-at-root":           {verdictError, verdictError},
	"manifestless-commands":      {verdictError, verdictError},
	"manifestless-skills":        {verdictPass, verdictError},
	"agents-directory":           {verdictError, verdictError},
	"plugin-name-claude":         {verdictError, verdictError},
	"plugin-name-mark":           {verdictWarn, verdictPass},
	"network-hosts":              {verdictPass, verdictPass},
	"directory-complete":         {verdictPass, verdictPass},
	"directory-short-readme":     {verdictPass, verdictError},
	"icon-small":                 {verdictPass, verdictPass},
	"string-source-github":       {verdictError, ""},
	"marketplace-name-imitation": {verdictError, ""},
	"marketplace-name-ok":        {verdictWarn, ""},
}

// wharfVerdict runs `wharf validate` on target and reads its verdict,
// leaving the plugin directory's findings aside unless profile is set.
func wharfVerdict(t *testing.T, target, profile string) (string, string) {
	t.Helper()
	res, err := validatePath(context.Background(), target, validateOptions{profile: profile})
	if res == nil {
		if err != nil {
			return verdictError, err.Error()
		}
		t.Fatalf("validate %s: no result", target)
	}
	verdict, first := verdictPass, ""
	for _, d := range res.Diagnostics {
		if d.IsDirectoryCheck() && profile == "" {
			continue
		}
		switch {
		case d.Severity == plugin.SeverityError:
			if verdict != verdictError {
				first = d.String()
			}
			verdict = verdictError
		case verdict == verdictPass && profile == "":
			verdict, first = verdictWarn, d.String()
		}
	}
	return verdict, first
}

// claudeReport is the part of `claude plugin validate --json` the
// comparison reads.
type claudeReport struct {
	Success  bool `json:"success"`
	Manifest struct {
		Errors   []claudeIssue `json:"errors"`
		Warnings []claudeIssue `json:"warnings"`
	} `json:"manifest"`
	Contents []struct {
		File     string        `json:"file"`
		Errors   []claudeIssue `json:"errors"`
		Warnings []claudeIssue `json:"warnings"`
	} `json:"contents"`
}

type claudeIssue struct{ Path, Message string }

// claudeVerdict runs claude plugin validate on target; safe to call from
// several goroutines (it reports a failure to run as an error, not through
// the test).
func claudeVerdict(cli *claudetest.CLI, home, target, profile string) (verdict, first string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := []string{"plugin", "validate", target}
	if profile != "" {
		cmd := cli.Command(ctx, home, filepath.Dir(target), append(args, "--profile", profile)...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return verdictPass, "", nil
		case errors.As(err, &ee) && ctx.Err() == nil:
			return verdictError, lastLine(string(out)), nil
		}
		return "", "", err
	}
	cmd := cli.Command(ctx, home, filepath.Dir(target), append(args, "--json")...)
	out, err := cmd.Output()
	var ee *exec.ExitError
	failed := false
	switch {
	case err == nil:
	case errors.As(err, &ee) && ctx.Err() == nil:
		failed = true
	default:
		return "", "", err
	}
	var r claudeReport
	if err := json.Unmarshal(out, &r); err != nil {
		if failed {
			return verdictError, lastLine(string(out)), nil
		}
		return "", "", fmt.Errorf("claude plugin validate %s --json: %v\n%s", target, err, out)
	}
	var errs, warns []string
	for _, e := range r.Manifest.Errors {
		errs = append(errs, e.Path+": "+e.Message)
	}
	for _, w := range r.Manifest.Warnings {
		warns = append(warns, w.Path+": "+w.Message)
	}
	for _, c := range r.Contents {
		for _, e := range c.Errors {
			errs = append(errs, filepath.Base(c.File)+": "+e.Path+": "+e.Message)
		}
		for _, w := range c.Warnings {
			warns = append(warns, filepath.Base(c.File)+": "+w.Path+": "+w.Message)
		}
	}
	switch {
	case !r.Success || failed:
		if len(errs) == 0 {
			errs = []string{lastLine(string(out))}
		}
		return verdictError, errs[0], nil
	case len(warns) > 0:
		return verdictWarn, warns[0], nil
	}
	return verdictPass, "", nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// realworldTargets are every marketplace of ../shared/realworld and every
// plugin folder stored in one, or nil without ../shared (the skip or, with
// WHARF_REQUIRE_SHARED=1, the failure is sharedtest's).
func realworldTargets(t *testing.T) (marketplaces, plugins []string) {
	t.Helper()
	var dir string
	t.Run("realworld", func(t *testing.T) { dir = sharedtest.RealWorldDir(t) })
	if dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		root := filepath.Join(dir, e.Name())
		m, _, err := plugin.ReadMarketplaceFile(plugin.MarketplaceFile(root))
		if err != nil {
			continue
		}
		marketplaces = append(marketplaces, root)
		seen[root] = true
		for i := range m.Plugins {
			en := &m.Plugins[i]
			if en.Source.Kind != plugin.SourceRelative {
				continue
			}
			pd, err := en.LocalDir(root)
			if err != nil || seen[pd] {
				continue
			}
			if _, err := os.Stat(pd); err != nil {
				continue
			}
			seen[pd] = true
			plugins = append(plugins, pd)
		}
	}
	sort.Strings(plugins)
	return marketplaces, plugins
}

// TestClaudeConformanceValidate compares wharf validate's verdict with
// `claude plugin validate` over every marketplace and plugin folder of
// ../shared/realworld and every minimal case of testdata/validate (whose
// expected verdicts hold without claude too), and prints the table. The
// error-or-not verdicts must agree on at least 98% of the targets and on
// every minimal case.
func TestClaudeConformanceValidate(t *testing.T) {
	claudetest.Lock(t, false)
	type target struct {
		group, path, profile string
		want                 string // the expected verdict of a minimal case
	}
	var targets []target
	names := make([]string, 0, len(validateCases))
	for name := range validateCases {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c := validateCases[name]
		p, err := filepath.Abs(filepath.Join("testdata/validate", name))
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, target{"testdata cases", p, "", c.verdict})
		if c.profile != "" {
			targets = append(targets, target{"testdata, --profile directory", p, plugin.ProfileDirectory, c.profile})
		}
	}
	// Without claude, the minimal cases still hold wharf to the verdicts
	// recorded from it.
	for _, tg := range targets {
		if got, first := wharfVerdict(t, tg.path, tg.profile); got != tg.want {
			t.Errorf("%s (profile %q): wharf says %s (%s); Claude Code says %s", filepath.Base(tg.path), tg.profile, got, first, tg.want)
		}
	}
	mkts, plugs := realworldTargets(t)
	for _, m := range mkts {
		targets = append(targets, target{group: "realworld marketplaces", path: m})
	}
	for _, p := range plugs {
		targets = append(targets, target{group: "realworld plugins", path: p})
	}
	for i := range targets {
		abs, err := filepath.Abs(targets[i].path)
		if err != nil {
			t.Fatal(err)
		}
		targets[i].path = abs
	}
	cli := claudetest.Find(t)
	version := cli.Version(t)
	// claude runs four at a time; each run gets its own HOME.
	type answer struct{ verdict, first string }
	answers := make([]answer, len(targets))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var runErr error
	next := make(chan int)
	for w := 0; w < 4; w++ {
		home := t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				v, f, err := claudeVerdict(cli, home, targets[i].path, targets[i].profile)
				mu.Lock()
				if err != nil && runErr == nil {
					runErr = err
				}
				answers[i] = answer{v, f}
				mu.Unlock()
			}
		}()
	}
	for i := range targets {
		next <- i
	}
	close(next)
	wg.Wait()
	if runErr != nil {
		t.Fatal(runErr)
	}
	type row struct{ n, same, sameErr int }
	rows := map[string]*row{}
	var order []string
	var diffs []string
	total := row{}
	for i, tg := range targets {
		r := rows[tg.group]
		if r == nil {
			r = &row{}
			rows[tg.group] = r
			order = append(order, tg.group)
		}
		cv, cfirst := answers[i].verdict, answers[i].first
		wv, wfirst := wharfVerdict(t, tg.path, tg.profile)
		r.n++
		total.n++
		if cv == wv {
			r.same++
			total.same++
		}
		if (cv == verdictError) == (wv == verdictError) {
			r.sameErr++
			total.sameErr++
		} else if tg.want != "" {
			t.Errorf("minimal case %s (profile %q): claude %s says %s (%s), wharf %s (%s)", filepath.Base(tg.path), tg.profile, version, cv, cfirst, wv, wfirst)
		}
		if cv != wv {
			diffs = append(diffs, fmt.Sprintf("  %s%s: claude %s (%s); wharf %s (%s)", rel(tg.path), profileNote(tg.profile), cv, clipLine(cfirst), wv, clipLine(wfirst)))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "wharf validate vs claude plugin validate %s\n", version)
	fmt.Fprintf(&b, "  %-32s %7s %13s %18s\n", "targets", "count", "same verdict", "same error-or-not")
	for _, g := range order {
		r := rows[g]
		fmt.Fprintf(&b, "  %-32s %7d %13d %18d\n", g, r.n, r.same, r.sameErr)
	}
	fmt.Fprintf(&b, "  %-32s %7d %13d %18d  (%.1f%% / %.1f%%)\n", "total", total.n, total.same, total.sameErr,
		100*float64(total.same)/float64(total.n), 100*float64(total.sameErr)/float64(total.n))
	if len(diffs) > 0 {
		b.WriteString("differences:\n" + strings.Join(diffs, "\n") + "\n")
	}
	t.Log("\n" + b.String())
	if total.n > 0 && float64(total.sameErr) < 0.98*float64(total.n) {
		t.Errorf("error-or-not verdicts agree on %d of %d targets; want at least 98%%", total.sameErr, total.n)
	}
}

func profileNote(p string) string {
	if p == "" {
		return ""
	}
	return " --profile " + p
}

// rel shortens a target to its last two path elements.
func rel(p string) string {
	return filepath.Join(filepath.Base(filepath.Dir(p)), filepath.Base(p))
}

func clipLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 140 {
		return s[:140] + "..."
	}
	return s
}
