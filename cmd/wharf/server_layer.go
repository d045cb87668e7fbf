package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	apiclient "github.com/wharfhq/wharf/internal/core/apiclient"
	"github.com/wharfhq/wharf/plugin"
)

// `wharf server layer ...` reads and writes the server's policy layers, as
// the console's policy pages do.

// maxLayerFile bounds a settings file: policy is distributed to every
// agent, and the server refuses far less than this.
const maxLayerFile = 4 << 20

// LayerOptions are what every `wharf server layer` verb takes.
type LayerOptions struct {
	IO     streams
	Client *apiclient.Client
}

// LayerPutOptions are `wharf server layer put`'s inputs.
type LayerPutOptions struct {
	LayerOptions
	Name string
	// File is the settings file (a JSON object of policy keys).
	File string
	// Rank is the layer's rank when RankSet; else the layer keeps its
	// own (a new one gets the server's default).
	Rank    int
	RankSet bool
	// Groups and Labels (key=value) target the layer; with neither the
	// layer keeps its target (a new one applies to the organization).
	Groups, Labels []string
}

func newServerLayerCmd(a *app, sc *serverConn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "layer",
		Short: "List, read, write and delete the server's policy layers",
	}
	run := func(f func(ctx context.Context, o LayerOptions, args []string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			cl, err := sc.client()
			if err != nil {
				return err
			}
			return f(cmd.Context(), LayerOptions{IO: a.io(), Client: cl}, args)
		}
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the policy layers in authority order: name, rank, target, version and last change",
		Args:  exactArgs(0, "no arguments"),
		RunE: run(func(ctx context.Context, o LayerOptions, _ []string) error {
			return runLayerList(ctx, &o)
		}),
	}
	get := &cobra.Command{
		Use:   "get <name>",
		Short: "Print a layer's settings (JSON); with --json the whole layer",
		Args:  exactArgs(1, "a layer name"),
		RunE: run(func(ctx context.Context, o LayerOptions, args []string) error {
			return runLayerGet(ctx, &o, args[0])
		}),
	}
	putOpts := &LayerPutOptions{}
	put := &cobra.Command{
		Use:   "put <name> --file settings.json [--rank N] [--group G]... [--label K=V]...",
		Short: "Create or replace a layer's settings",
		Long: "Create the layer, or replace its settings with the file's. The layer's Rego modules are kept;\n" +
			"without --rank, --group or --label the layer keeps its rank and target (a new layer: rank 100,\n" +
			"the organization). A change made meanwhile by someone else is never overwritten: the write\n" +
			"fails with a version conflict; run the command again.",
		Args: exactArgs(1, "a layer name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := sc.client()
			if err != nil {
				return err
			}
			p := *putOpts
			p.LayerOptions, p.Name = LayerOptions{IO: a.io(), Client: cl}, args[0]
			p.RankSet = cmd.Flags().Changed("rank")
			return runLayerPut(cmd.Context(), &p)
		},
	}
	put.Flags().StringVar(&putOpts.File, "file", "", "the settings file: a JSON object of policy keys")
	put.Flags().IntVar(&putOpts.Rank, "rank", 0, "the layer's rank (lower = higher authority, 0..1000000)")
	put.Flags().StringArrayVar(&putOpts.Groups, "group", nil, "a group the layer applies to; repeatable")
	put.Flags().StringArrayVar(&putOpts.Labels, "label", nil, "a machine label the layer applies to, key=value; repeatable")
	del := &cobra.Command{
		Use:   "delete <name>",
		Short: "Delete a layer (its history keeps every past version)",
		Args:  exactArgs(1, "a layer name"),
		RunE: run(func(ctx context.Context, o LayerOptions, args []string) error {
			return runLayerDelete(ctx, &o, args[0])
		}),
	}
	history := &cobra.Command{
		Use:   "history [name]",
		Short: "List the changes of the policy layers (of one layer), oldest first",
		Args:  maxArgs(1, "at most a layer name"),
		RunE: run(func(ctx context.Context, o LayerOptions, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return runLayerHistory(ctx, &o, name)
		}),
	}
	var revision uint64
	restore := &cobra.Command{
		Use:   "restore <name> --revision SEQ",
		Short: "Write a past revision of a layer (settings, rank, target, modules) as its next version",
		Long: "Takes the revision numbered SEQ in wharf server layer history and writes what the layer was then\n" +
			"as its next version (a deleted layer comes back). A change made meanwhile by someone else is\n" +
			"never overwritten: the write fails with a version conflict; run the command again.",
		Args: exactArgs(1, "a layer name"),
		RunE: run(func(ctx context.Context, o LayerOptions, args []string) error {
			return runLayerRestore(ctx, &o, args[0], revision)
		}),
	}
	restore.Flags().Uint64Var(&revision, "revision", 0, "the history entry to restore (the # of wharf server layer history)")
	cmd.AddCommand(list, get, put, del, history, restore)
	return cmd
}

// runLayerRestore writes revision seq of layer name (from the server's
// history, which keeps each revision's whole document) as the layer's
// next version, with If-Match on the version it has now.
func runLayerRestore(ctx context.Context, o *LayerOptions, name string, seq uint64) error {
	if seq == 0 {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--revision", Err: errors.New("--revision is required"),
			Hint: "pick the # of a change from: wharf server layer history " + name}
	}
	es, err := o.Client.LayerHistory(ctx, name)
	if err != nil {
		return err
	}
	var doc *apiclient.PolicyLayer
	for _, e := range es {
		if e.Seq == seq && e.Layer == name {
			doc = e.Document
		}
	}
	if doc == nil {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--revision", Err: fmt.Errorf("layer %s has no revision #%d with a document to restore", name, seq),
			Hint: "pick the # of a change that wrote the layer from: wharf server layer history " + name}
	}
	cur, err := o.Client.Layer(ctx, name)
	if err != nil {
		return err
	}
	var version uint64
	if cur != nil {
		version = cur.Version
	}
	rank := doc.Rank
	target := apiclient.Target{} // a revision that applied to everyone
	if doc.Target != nil {
		target = *doc.Target
	}
	modules := doc.Modules
	if modules == nil {
		modules = map[string]string{}
	}
	w, err := o.Client.PutLayer(ctx, name, version, apiclient.LayerChange{Rank: &rank, Target: &target, Settings: doc.Settings, Modules: modules})
	if err != nil {
		return err
	}
	if o.IO.JSON {
		return o.IO.printJSON(w)
	}
	if w.Layer != nil {
		o.IO.printf("restored layer %s to revision #%d: rank %d, %s, version %d; policy revision %d\n", name, seq, w.Layer.Rank,
			targetText(w.Layer.Target), w.Layer.Version, w.Revision)
	}
	for _, msg := range w.Warnings {
		o.IO.warnf("%s", msg)
	}
	return nil
}

// targetText is a layer's target as one line.
func targetText(t *apiclient.Target) string {
	if t == nil || len(t.Groups)+len(t.Labels) == 0 {
		return "organization"
	}
	var parts []string
	for _, g := range t.Groups {
		parts = append(parts, "group="+g)
	}
	for _, l := range t.Labels {
		parts = append(parts, "label:"+l)
	}
	return strings.Join(parts, ",")
}

func runLayerList(ctx context.Context, o *LayerOptions) error {
	p, err := o.Client.Policy(ctx)
	if err != nil {
		return err
	}
	if p.Layers == nil {
		p.Layers = []apiclient.PolicyLayer{}
	}
	if o.IO.JSON {
		return o.IO.printJSON(p.Layers)
	}
	if len(p.Layers) == 0 {
		o.IO.printf("no policy layers; write one with: wharf server layer put <name> --file settings.json\n")
		return nil
	}
	for _, l := range p.Layers {
		o.IO.printf("%s  rank %d  %s  version %d  updated %s by %s\n", l.Name, l.Rank, targetText(l.Target),
			l.Version, l.UpdatedAt.UTC().Format(time.RFC3339), l.UpdatedBy)
	}
	return nil
}

func runLayerGet(ctx context.Context, o *LayerOptions, name string) error {
	l, err := o.Client.Layer(ctx, name)
	if err != nil {
		return err
	}
	if l == nil {
		return noLayer(name)
	}
	if o.IO.JSON {
		return o.IO.printJSON(l)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, l.Settings, "", "  "); err != nil {
		return fmt.Errorf("wharf server %s sent layer %s with settings that are not JSON: %w", o.Client.Base, name, err)
	}
	o.IO.printf("%s\n", b.String())
	return nil
}

func noLayer(name string) error {
	return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: name, Err: errors.New("no such policy layer"),
		Hint: "list the layers with: wharf server layer list"}
}

// readLayerSettings reads a settings file: one JSON object, nothing else.
func readLayerSettings(path string) (json.RawMessage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: path, Err: err, Hint: "give --file the path of a settings JSON file"}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxLayerFile+1))
	if err != nil {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: path, Err: err, Hint: "give --file the path of a settings JSON file"}
	}
	if len(data) > maxLayerFile {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: path,
			Err: fmt.Errorf("larger than %d bytes", maxLayerFile), Hint: "a layer's settings are a small JSON object of policy keys"}
	}
	raw, err := parseLayerSettings(data)
	if err != nil {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: path, Err: err,
			Hint: `the file must hold one JSON object of policy keys, e.g. {"blockedMarketplaces": []}`}
	}
	return raw, nil
}

// parseLayerSettings checks that data is one JSON object (with no
// duplicate keys at its top) and returns it.
func parseLayerSettings(data []byte) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err == io.EOF {
		return nil, errors.New("empty; expected a JSON object")
	}
	if err != nil {
		return nil, jsonPosErr(data, dec, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, jsonPosErr(data, dec, err)
		}
		key, _ := k.(string)
		if seen[key] {
			return nil, fmt.Errorf("key %q appears twice", key)
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, jsonPosErr(data, dec, fmt.Errorf("key %q: %w", key, err))
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, jsonPosErr(data, dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return json.RawMessage(bytes.TrimSpace(data)), nil
}

// jsonPosErr is err with the line where the decoder stopped.
func jsonPosErr(data []byte, dec *json.Decoder, err error) error {
	off := dec.InputOffset()
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	return fmt.Errorf("line %d: %w", line, err)
}

func runLayerPut(ctx context.Context, o *LayerPutOptions) error {
	if o.File == "" {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--file", Err: errors.New("--file is required"),
			Hint: "e.g. wharf server layer put " + o.Name + " --file settings.json"}
	}
	if o.RankSet && (o.Rank < 0 || o.Rank > 1000000) {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--rank", Err: fmt.Errorf("rank %d is out of range", o.Rank),
			Hint: "give a rank from 0 to 1000000 (lower = higher authority)"}
	}
	for _, l := range o.Labels {
		if k, _, ok := strings.Cut(l, "="); !ok || strings.TrimSpace(k) == "" {
			return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--label", Err: fmt.Errorf("label %q is not key=value", l),
				Hint: "e.g. --label os=linux"}
		}
	}
	settings, err := readLayerSettings(o.File)
	if err != nil {
		return err
	}
	cur, err := o.Client.Layer(ctx, o.Name)
	if err != nil {
		return err
	}
	ch := apiclient.LayerChange{Settings: settings, Modules: map[string]string{}}
	var version uint64
	if cur != nil {
		version = cur.Version
		if cur.Modules != nil {
			ch.Modules = cur.Modules
		}
	}
	if o.RankSet {
		r := o.Rank
		ch.Rank = &r
	}
	if len(o.Groups)+len(o.Labels) > 0 {
		ch.Target = &apiclient.Target{Groups: o.Groups, Labels: o.Labels}
	}
	w, err := o.Client.PutLayer(ctx, o.Name, version, ch)
	if err != nil {
		return err
	}
	if o.IO.JSON {
		return o.IO.printJSON(w)
	}
	verb := "updated"
	if version == 0 {
		verb = "created"
	}
	if w.Layer != nil {
		o.IO.printf("%s layer %s: rank %d, %s, version %d; policy revision %d\n", verb, w.Layer.Name, w.Layer.Rank,
			targetText(w.Layer.Target), w.Layer.Version, w.Revision)
	}
	for _, msg := range w.Warnings {
		o.IO.warnf("%s", msg)
	}
	return nil
}

func runLayerDelete(ctx context.Context, o *LayerOptions, name string) error {
	w, err := o.Client.DeleteLayer(ctx, name)
	var ae *apiclient.APIError
	if errors.As(err, &ae) && ae.Status == 404 {
		return noLayer(name)
	}
	if err != nil {
		return err
	}
	if o.IO.JSON {
		return o.IO.printJSON(map[string]any{"deleted": name, "revision": w.Revision, "policyVersion": w.PolicyVersion})
	}
	o.IO.printf("deleted layer %s; policy revision %d (its history keeps every past version)\n", name, w.Revision)
	return nil
}

func runLayerHistory(ctx context.Context, o *LayerOptions, name string) error {
	es, err := o.Client.LayerHistory(ctx, name)
	if err != nil {
		return err
	}
	if es == nil {
		es = []apiclient.LayerHistoryEntry{}
	}
	if o.IO.JSON {
		return o.IO.printJSON(es)
	}
	if len(es) == 0 {
		o.IO.printf("no changes\n")
		return nil
	}
	for _, e := range es {
		o.IO.printf("#%d  %s  %s  %s version %d  policy revision %d  by %s\n", e.Seq, e.Time.UTC().Format(time.RFC3339),
			e.Action, e.Layer, e.LayerVersion, e.Revision, e.Actor)
	}
	return nil
}
