package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// signResult is `wharf sign --json`.
type signResult struct {
	Target string `json:"target"`
	Digest string `json:"digest"`
	// Statement is what the signature covers (its canonical JSON).
	Statement trust.Statement `json:"statement"`
	KeyID     string          `json:"keyid"`
	Sig       string          `json:"sig"`
	WrittenTo string          `json:"writtenTo"`
	// Dropped lists key ids whose signatures were removed from the entry
	// because they covered a previous integrity digest.
	Dropped []string `json:"dropped,omitempty"`
}

func newSignCmd(a *app) *cobra.Command {
	var keyFile, entryFile, name, market string
	cmd := &cobra.Command{
		Use:   "sign <plugin-dir> --key <private.pem> (--marketplace <name> [--name <plugin>] | --marketplace-entry <marketplace.json> --name <plugin>)",
		Short: "Sign a plugin: its name, marketplace, version and content digest",
		Long: "Compute the w1: content digest of <plugin-dir> and sign, with the private key, the statement\n" +
			"{\"type\":\"" + trust.StatementType + "\",\"plugin\",\"marketplace\",\"version\",\"digest\"} that binds the\n" +
			"digest to the plugin's name, its marketplace and its version (plugin.json's, else the entry's):\n" +
			"the signature does not pass for the same content under another name or marketplace.\n" +
			"The signature ({keyid, sig}) goes into the detached file .claude-plugin/wharf-signatures.json\n" +
			"of the plugin (--marketplace names the marketplace; the plugin's name is plugin.json's unless\n" +
			"--name), or, with --marketplace-entry and --name, into that entry's `signatures` (and its\n" +
			"`integrity` is set to the digest). A signature by the same key is replaced. Files are\n" +
			"rewritten crash-safely.",
		Args: exactArgs(1, "one plugin directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if keyFile == "" {
				return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--key",
					Err: errors.New("no private key given"), Hint: "pass --key <private.pem>; make one with: wharf keygen"}
			}
			if entryFile != "" && name == "" {
				return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--marketplace-entry",
					Err: errors.New("--marketplace-entry needs --name"), Hint: "pass the entry's name with --name"}
			}
			if entryFile != "" && market != "" {
				return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--marketplace",
					Err: errors.New("--marketplace and --marketplace-entry exclude each other"), Hint: "the marketplace's name is read from --marketplace-entry"}
			}
			if entryFile == "" && market == "" {
				return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--marketplace",
					Err:  errors.New("no marketplace given: a signature binds the marketplace the plugin is published in"),
					Hint: "pass --marketplace <name>, or --marketplace-entry <marketplace.json> --name <plugin>"}
			}
			priv, err := os.ReadFile(keyFile)
			if err != nil {
				return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: keyFile, Err: err, Hint: "make a key with: wharf keygen"}
			}
			if _, err := cryptoutils.UnmarshalPEMToPrivateKey(priv, cryptoutils.SkipPassword); err != nil {
				return keyFileError("--key", keyFile, err, "pass the private key PEM made by: wharf keygen (PREFIX.key)")
			}
			tree, err := trust.Digest(dir)
			if err != nil {
				return err
			}
			var entryVersion string
			if entryFile != "" {
				if market, entryVersion, err = entryOf(entryFile, name); err != nil {
					return err
				}
			} else if name == "" {
				if name, err = manifestName(dir); err != nil {
					return err
				}
			}
			id := plugin.ID{Name: name, Source: market}
			if err := id.Validate(); err != nil {
				return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: id.String(), Err: err,
					Hint: "plugin and marketplace names are lowercase letters, digits and dashes"}
			}
			st := trust.NewStatement(id, trust.DeclaredVersion(dir, entryVersion), tree.Digest)
			sig, err := trust.SignStatement(priv, st)
			if err != nil {
				if pe, ok := err.(*plugin.Error); ok && pe.Object == "" {
					pe.Object = keyFile
				}
				return err
			}
			res := signResult{Target: dir, Digest: tree.Digest, Statement: st, KeyID: sig.KeyID, Sig: sig.Sig}
			if entryFile == "" {
				if err := trust.AddSigned(dir, sig, st); err != nil {
					return err
				}
				res.WrittenTo = trust.SignaturesFile
			} else {
				dropped, err := signEntry(entryFile, name, tree.Digest, sig)
				if err != nil {
					return err
				}
				res.WrittenTo, res.Dropped = entryFile, dropped
			}
			if a.cfg.JSON {
				return a.printJSON(res)
			}
			a.printf("Signed %s as %s\n  digest %s\n  keyid  %s\n  written to %s\n", dir, st, tree.Digest, sig.KeyID, res.WrittenTo)
			if len(res.Dropped) > 0 {
				a.printf("  dropped signatures over the previous integrity by: %s\n", strings.Join(res.Dropped, ", "))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&keyFile, "key", "", "private key PEM (from wharf keygen)")
	cmd.Flags().StringVar(&market, "marketplace", "", "the marketplace the plugin is published in (detached signatures file)")
	cmd.Flags().StringVar(&entryFile, "marketplace-entry", "", "write into this marketplace.json instead of the detached file")
	cmd.Flags().StringVar(&name, "name", "", "the plugin's name in its marketplace (the entry to sign in --marketplace-entry; default plugin.json's name)")
	return cmd
}

// entryOf reads the marketplace's name and the version of its entry name
// from a marketplace.json.
func entryOf(file, name string) (market, version string, err error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", "", &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeNotFound, Object: file, Err: err}
	}
	m, _, err := plugin.ParseMarketplace(data, file)
	if err != nil {
		return "", "", err
	}
	var names []string
	for _, e := range m.Plugins {
		if e.Name == name {
			return m.Name, e.Version, nil
		}
		names = append(names, e.Name)
	}
	return "", "", &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeNotFound, Object: file,
		Err:  fmt.Errorf("no plugin entry named %q (entries: %s)", name, strings.Join(names, ", ")),
		Hint: "pass the entry's name with --name"}
}

// manifestName is the name in the plugin's plugin.json.
func manifestName(dir string) (string, error) {
	f := plugin.ManifestFile(dir)
	data, err := os.ReadFile(f)
	if err != nil {
		return "", &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: f, Err: err,
			Hint: "name the plugin with --name, as its marketplace lists it"}
	}
	m, _, err := plugin.ParseManifest(data, f)
	if err != nil {
		return "", err
	}
	if m.Name == "" {
		return "", &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: f, Err: errors.New("plugin.json has no name"),
			Hint: "name the plugin with --name, as its marketplace lists it"}
	}
	return m.Name, nil
}

// signEntry sets integrity and adds sig to the entry `name` of a
// marketplace.json, keeping every other key and their order. Signatures by
// other keys stay when the integrity is unchanged; when it changes they
// covered other content and are dropped (and returned).
func signEntry(file, name, digest string, sig trust.Signature) ([]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeNotFound, Object: file, Err: err}
	}
	if _, _, err := plugin.ParseMarketplace(data, file); err != nil {
		return nil, err
	}
	root, err := decodeOrdered(data)
	if err != nil {
		return nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeManifestParse, Object: file, Err: err}
	}
	top, _ := root.(jsonObj)
	plugins, _ := top.get("plugins").([]any)
	var entry jsonObj
	var idx int
	var names []string
	for i, p := range plugins {
		o, _ := p.(jsonObj)
		n, _ := o.get("name").(string)
		names = append(names, n)
		if n == name {
			entry, idx = o, i
		}
	}
	if entry == nil {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeNotFound, Object: file,
			Err:  fmt.Errorf("no plugin entry named %q (entries: %s)", name, strings.Join(names, ", ")),
			Hint: "pass the entry's name with --name"}
	}
	var kept []any
	var dropped []string
	old, _ := entry.get("integrity").(string)
	prev, _ := entry.get("signatures").([]any)
	for _, p := range prev {
		o, _ := p.(jsonObj)
		id, _ := o.get("keyid").(string)
		switch {
		case id == sig.KeyID:
		case old != digest:
			dropped = append(dropped, id)
		default:
			kept = append(kept, p)
		}
	}
	kept = append(kept, jsonObj{{"keyid", sig.KeyID}, {"sig", sig.Sig}})
	entry = entry.set("integrity", digest).set("signatures", kept)
	plugins[idx] = entry
	out, err := encodeOrdered(top, indentOf(data))
	if err != nil {
		return nil, err
	}
	perm := os.FileMode(0o644)
	if fi, err := os.Stat(file); err == nil {
		perm = fi.Mode().Perm()
	}
	return dropped, atomicfile.WriteFile(file, out, perm)
}

// jsonObj is a JSON object that keeps its key order, so rewriting a user's
// marketplace.json changes only what wharf sets.
type jsonObj []jsonKV

type jsonKV struct {
	Key string
	Val any // jsonObj, []any, json.Number, string, bool or nil
}

func (o jsonObj) get(k string) any {
	for _, kv := range o {
		if kv.Key == k {
			return kv.Val
		}
	}
	return nil
}

func (o jsonObj) set(k string, v any) jsonObj {
	for i := range o {
		if o[i].Key == k {
			o[i].Val = v
			return o
		}
	}
	return append(o, jsonKV{k, v})
}

func (o jsonObj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshalNoEscape(kv.Key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := marshalNoEscape(kv.Val)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func decodeOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the top-level JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := jsonObj{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				o = append(o, jsonKV{k, v})
			}
			_, err := dec.Token() // '}'
			return o, err
		case '[':
			a := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token() // ']'
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil
	}
}

func encodeOrdered(v any, indent string) ([]byte, error) {
	compact, err := marshalNoEscape(v)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact, "", indent); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// indentOf guesses the file's indent unit from its first indented line.
func indentOf(data []byte) string {
	for _, line := range strings.Split(string(data), "\n")[1:] {
		trimmed := strings.TrimLeft(line, " \t")
		if n := len(line) - len(trimmed); n > 0 && trimmed != "" {
			return line[:n]
		}
	}
	return "  "
}
