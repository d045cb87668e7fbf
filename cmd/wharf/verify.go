package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// verifyTarget is what `wharf verify` checks: a directory, the digest it
// must have (and where that came from), the signatures found for it and,
// for an installed plugin, the pin's file list to name changes.
type verifyTarget struct {
	dir      string
	id       plugin.ID
	version  string
	expected string
	source   string // "expected", "integrity" or "pin"
	// entrySigs are the marketplace entry's signatures; the detached
	// file's are read with them (trust.PluginSignatures).
	entrySigs []trust.Signature
	fp        trust.FP
	// entryVersion is the marketplace entry's version, for the statement's
	// version when plugin.json declares none.
	entryVersion string
	// named is what a directory is published as (--marketplace, --name).
	named plugin.ID
}

// VerifyOptions are wharf verify's inputs.
type VerifyOptions struct {
	IO   streams
	Home *home.Home
	// Target is the argument: a plugin directory, or plugin@marketplace.
	Target string
	// KeyFiles are the --key public keys; any of them requires a valid
	// signature by one.
	KeyFiles []string
	// Expect is the w1: digest the plugin must have; "" for the pin's or
	// the entry's.
	Expect string
	// Marketplace and Name say what a directory is published as.
	Marketplace, Name string
	// RequireSignature requires a valid signature by a trusted key.
	RequireSignature bool
}

func newVerifyCmd(a *app) *cobra.Command {
	opts := &VerifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify <plugin-dir | plugin@marketplace> [--key pub.pem ...] [--expect w1:...]",
		Short: "Re-hash a plugin and check its digest and signatures",
		Long: "Compute the w1: content digest of a plugin directory, or of an installed plugin given as\n" +
			"plugin@marketplace, and compare it with the expected digest: --expect, else the installed pin,\n" +
			"else the marketplace entry's integrity (for a plugin not installed whose source is local).\n" +
			"Signatures come from the marketplace entry and .claude-plugin/wharf-signatures.json. With --key\n" +
			"(repeatable) or --require-signature, a valid signature by a trusted key is required; trusted keys\n" +
			"are the --key files, else $WHARF_HOME/keys/*.pub.\n\n" +
			"A signature covers the statement binding the plugin's name, marketplace, version and digest;\n" +
			"for a directory, --marketplace (and --name, default plugin.json's) says what it is published\n" +
			"as. Old signatures over the bare digest still verify, with a warning that they are weaker.\n\n" +
			"Exit 0 when everything required holds, 4 (trust rejected) otherwise, with the reason.",
		Args: exactArgs(1, "one plugin directory or plugin@marketplace"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.IO, opts.Home, opts.Target = a.io(), a.h, args[0]
			return runVerify(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringArrayVar(&opts.KeyFiles, "key", nil, "trusted public key PEM; repeatable; requires a valid signature by one of them")
	cmd.Flags().StringVar(&opts.Expect, "expect", "", "the w1: digest the plugin must have")
	cmd.Flags().StringVar(&opts.Marketplace, "marketplace", "", "for a directory: the marketplace it is published in (signatures bind it)")
	cmd.Flags().StringVar(&opts.Name, "name", "", "for a directory: the plugin's name in its marketplace (default plugin.json's)")
	cmd.Flags().BoolVar(&opts.RequireSignature, "require-signature", false, "require a valid signature by a trusted key ($WHARF_HOME/keys/*.pub when no --key)")
	return cmd
}

// runVerify re-hashes opts.Target and checks its digest, its signatures,
// the revocations and the policy's signature rules; any problem is a
// trust rejection (exit 4) after the report is printed.
func runVerify(ctx context.Context, opts *VerifyOptions) error {
	expect, market, name := opts.Expect, opts.Marketplace, opts.Name
	if expect != "" && !trust.ValidDigest(expect) {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--expect",
			Err: fmt.Errorf("%q is not a w1: digest", expect), Hint: "pass the digest as printed by wharf verify, e.g. w1:47DEQpj8...="}
	}
	keys := trust.Keyring{}
	for _, f := range opts.KeyFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: f, Err: err, Hint: "pass a public key PEM made by: wharf keygen"}
		}
		if err := keys.AddPEM(b); err != nil {
			return keyFileError("--key", f, err, "pass a public key PEM made by: wharf keygen")
		}
	}
	required := opts.RequireSignature || len(opts.KeyFiles) > 0
	if len(opts.KeyFiles) == 0 {
		trusted, err := opts.Home.TrustedKeys()
		if err != nil {
			return err
		}
		keys = trusted
	}
	t, err := verifyTargetOf(opts.Home, opts.Target)
	if err != nil {
		return err
	}
	if expect != "" {
		t.expected, t.source = expect, "expected"
	}
	if t.id.IsZero() && market != "" {
		if name == "" {
			if name, err = manifestName(t.dir); err != nil {
				return err
			}
		}
		t.named = plugin.ID{Name: name, Source: market}
		if err := t.named.Validate(); err != nil {
			return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: t.named.String(), Err: err,
				Hint: "plugin and marketplace names are lowercase letters, digits and dashes"}
		}
	}
	return verifyCheck(ctx, opts.IO, opts.Home, opts.Target, t, keys, required)
}

// verifyTarget resolves the argument: an existing directory, or an
// installed plugin (falling back to a catalog entry with a local source).
func verifyTargetOf(h *home.Home, arg string) (*verifyTarget, error) {
	if fi, err := os.Stat(arg); err == nil && fi.IsDir() {
		return &verifyTarget{dir: arg}, nil
	}
	if !strings.Contains(arg, "@") {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeNotFound, Object: arg,
			Err: fmt.Errorf("%s is neither a directory nor plugin@marketplace", arg), Hint: "pass a plugin directory or an installed plugin as name@marketplace"}
	}
	id, err := plugin.ParseID(arg)
	if err != nil {
		return nil, err
	}
	st, err := h.Store()
	if err != nil {
		return nil, err
	}
	t := &verifyTarget{id: id}
	// The catalog entry supplies signatures (and integrity when not installed).
	var entry *plugin.Entry
	var entryDir string
	if mgr, err := h.Marketplaces(); err == nil {
		if cat, err := mgr.Catalog(); err == nil {
			if hit, err := cat.Lookup(id); err == nil {
				entry = hit.Entry
				if rs, err := hit.Resolve(h.Getenv); err == nil {
					entryDir = rs.Dir
				}
			}
		}
	}
	if entry != nil {
		t.entrySigs = entry.Signatures
		t.entryVersion = entry.Version
	}
	c, err := cache.New(cache.Options{Home: h.Paths().Home(), Store: st})
	if err != nil {
		return nil, err
	}
	rec, err := c.Get(id)
	switch {
	case err == nil:
		t.dir, t.version, t.expected, t.source, t.fp = rec.InstallPath, rec.Version, rec.Digest, "pin", rec.Fingerprint
		return t, nil
	case !errors.Is(err, cache.ErrNotInstalled):
		return nil, err
	case entry != nil && entryDir != "":
		t.dir, t.version, t.expected, t.source = entryDir, entry.Version, entry.Integrity, "integrity"
		return t, nil
	}
	return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeNotFound, Object: id.String(),
		Err:  fmt.Errorf("%s is not installed and has no local source to verify", id),
		Hint: "install it first: wharf install " + id.String() + "; or verify a directory: wharf verify <plugin-dir> --expect w1:..."}
}

func verifyCheck(ctx context.Context, io streams, h *home.Home, arg string, t *verifyTarget, keys trust.Keyring, required bool) error {
	tree, err := trust.Digest(t.dir)
	if err != nil {
		return err
	}
	var others []string
	if t.expected != "" {
		others = append(others, t.expected)
	}
	sigs, err := trust.PluginSignatures(t.dir, t.entrySigs)
	if err != nil {
		return err
	}
	subject := t.id
	if subject.IsZero() {
		subject = t.named
	}
	// The one rule install applies too. A directory published as nothing
	// in particular is checked against the statement recorded with each
	// signature, else the bare digest.
	st := trust.Statement{Digest: tree.Digest}
	if !subject.IsZero() {
		st = trust.NewStatement(subject, trust.DeclaredVersion(t.dir, t.entryVersion), tree.Digest)
	}
	check := trust.CheckSignatures(sigs, st, keys, others...)
	results := check.Results
	var problems []string
	var changed []string
	if t.expected != "" && tree.Digest != t.expected {
		changed = trust.ChangedSince(t.fp, tree)
		m := &trust.MismatchError{ID: t.id, Version: t.version, Expected: t.expected, Actual: tree.Digest, Changed: changed, Source: t.source}
		msg := m.Error()
		if t.id.IsZero() {
			msg = arg + ": " + strings.TrimPrefix(msg, "plugin: ")
		}
		problems = append(problems, msg)
	}
	if p := check.Problems(); len(p) > 0 {
		problems = append(problems, "a signature present does not cover the content: "+strings.Join(p, "; "))
	}
	if t.source == "pin" {
		// An installed version holds nothing its digest does not cover.
		if un := trust.Uncovered(t.dir); len(un) > 0 {
			changed = append(changed, un...)
			problems = append(problems, fmt.Sprintf("%s holds %s, which the digest does not cover; an installed version never has it, so it was added after the install",
				t.dir, strings.Join(un, ", ")))
		}
	}
	signed := len(check.Verified()) > 0
	if required && !signed {
		var why []string
		for _, r := range results {
			why = append(why, r.Reason)
		}
		if len(results) == 0 {
			why = append(why, "the plugin carries no signatures")
		}
		problems = append(problems, fmt.Sprintf("no valid signature by a trusted key (trusted: %s): %s",
			strings.Join(orNoneList(keys.IDs()), ", "), strings.Join(why, "; ")))
	}
	if msg, err := revokedProblem(h, subject, t, tree.Digest); err != nil {
		return err
	} else if msg != "" {
		problems = append(problems, msg)
	}
	if !t.id.IsZero() {
		// Managed policy may demand signatures by named keys for this
		// plugin's marketplace (requireSignatures).
		if msg, err := policySignatureProblem(ctx, h, t.id, check); err != nil {
			return err
		} else if msg != "" {
			problems = append(problems, msg)
		}
	}
	rep := trust.NewReport(arg, tree, t.expected, changed, results)
	rep.OK = len(problems) == 0
	rep.Checked = t.expected != "" || check.Checked() || required || len(problems) > 0
	if io.JSON {
		if err := io.printJSON(rep); err != nil {
			return err
		}
	} else {
		printVerify(io, rep, results, t)
	}
	if rep.OK {
		return nil
	}
	obj := arg
	if !t.id.IsZero() {
		obj = t.id.String()
		if t.version != "" {
			obj += " " + t.version
		}
	}
	return &plugin.Error{Layer: plugin.LayerTrust, Type: plugin.TypeTrustRejected, Object: obj,
		Err:  errors.New(strings.Join(problems, "; ")),
		Hint: verifyHint(t)}
}

func verifyHint(t *verifyTarget) string {
	switch t.source {
	case "pin":
		return "reinstall it to restore the pinned content: wharf install " + t.id.String()
	case "integrity":
		return "the plugin's files differ from what its marketplace published; refresh it: wharf marketplace update " + t.id.Source
	}
	return "compare with a trusted copy, or re-sign the plugin if the change is intended: wharf sign <plugin-dir> --key <key>"
}

func orNoneList(ids []string) []string {
	if len(ids) == 0 {
		return []string{"none"}
	}
	return ids
}

func printVerify(io streams, rep trust.VerifyReport, results []trust.SigResult, t *verifyTarget) {
	io.printf("%s\n  digest   %s\n", rep.Target, rep.Digest)
	if rep.Expected != "" {
		mark := "matches"
		if rep.Expected != rep.Digest {
			mark = "MISMATCH"
		}
		io.printf("  expected %s (%s, %s)\n", rep.Expected, t.source, mark)
	}
	for _, c := range rep.Changed {
		io.printf("  changed  %s\n", c)
	}
	for _, r := range results {
		switch {
		case r.Valid && r.Legacy:
			io.printf("  signature %s: valid, trusted, old form (weaker: it does not bind the plugin's name, marketplace or version)\n", r.KeyID)
		case r.Valid && r.SignedAs != "":
			io.printf("  signature %s: valid, trusted, signed as %s\n", r.KeyID, r.SignedAs)
		case r.Valid:
			io.printf("  signature %s: valid, trusted\n", r.KeyID)
		default:
			io.printf("  signature %s: %s\n", r.KeyID, r.Reason)
		}
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(io.Err, "wharf: warning: %s\n", w)
	}
	switch {
	case rep.OK && rep.Checked:
		io.printf("OK\n")
	case rep.OK && len(results) > 0:
		io.printf("nothing to check against: no pinned, published or --expect digest, and no trusted key to check the signatures with (pass --key <pub.pem>)\n")
		io.printf("pin the digest above: wharf verify %s --expect %s\n", rep.Target, rep.Digest)
	case rep.OK:
		io.printf("nothing to check against: no pinned, published or --expect digest and no signature\n")
		io.printf("pin the digest above: wharf verify %s --expect %s\n", rep.Target, rep.Digest)
	}
}

// policySignatureProblem asks policy whether the verified signatures satisfy
// requireSignatures for id's marketplace, and returns the reason if not.
func policySignatureProblem(ctx context.Context, h *home.Home, id plugin.ID, check trust.SignatureCheck) (string, error) {
	e, err := h.Policy()
	if err != nil {
		return "", err
	}
	d, err := e.Decide(ctx, policy.Request{Action: policy.ActionInstall, Plugin: id,
		Marketplace: policy.Marketplace{Name: id.Source, Source: knownMarketSource(h, id.Source)},
		Signatures:  policy.SignatureKeys(check.Keys, check.LegacyKeys, check.LegacyFingerprints)})
	if err != nil {
		return "", err
	}
	var why []string
	for _, r := range d.Reasons {
		if r.Rule == "requireSignatures" {
			why = append(why, r.Message+" (policy layer "+r.Layer+")")
		}
	}
	return strings.Join(why, "; "), nil
}

// revokedProblem says why the verified content is revoked: its plugin
// version, or its digest under any name, withdrawn by a revocation of the
// policy bundle in force; "" when none matches.
func revokedProblem(h *home.Home, id plugin.ID, t *verifyTarget, digest string) (string, error) {
	e, err := h.Policy()
	if err != nil {
		return "", err
	}
	version := t.version
	if version == "" && !id.IsZero() {
		version = trust.DeclaredVersion(t.dir, t.entryVersion)
	}
	r, ok := e.Revocations().Match(id, version, digest)
	if !ok {
		return "", nil
	}
	return plainMessage(policy.RevokedError(plugin.LayerTrust, r, id, version, digest).Error()), nil
}
