package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// keygenResult is `wharf keygen --json`.
type keygenResult struct {
	KeyID   string `json:"keyid"`
	Alg     string `json:"alg"`
	Private string `json:"private"`
	Public  string `json:"public"`
}

func newKeygenCmd(a *app) *cobra.Command {
	var prefix, alg string
	var force bool
	cmd := &cobra.Command{
		Use:   "keygen [--out PREFIX] [--alg ecdsa-p256|ed25519]",
		Short: "Make a signing key pair: PREFIX.key (private, mode 0600) and PREFIX.pub",
		Long: "Make a key pair for signing plugin digests with `wharf sign`. The private key goes to PREFIX.key\n" +
			"(unencrypted PKCS#8 PEM, mode 0600), the public key to PREFIX.pub (PEM), which verifiers pass to\n" +
			"`wharf verify --key` or put in $WHARF_HOME/keys/. Existing files are kept unless --force.",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !validAlg(trust.Alg(alg)) {
				return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--alg",
					Err: fmt.Errorf("unknown key algorithm %q", alg), Hint: "use --alg ecdsa-p256 or --alg ed25519"}
			}
			privFile, pubFile := prefix+".key", prefix+".pub"
			if !force {
				for _, f := range []string{privFile, pubFile} {
					if _, err := os.Lstat(f); err == nil || !errors.Is(err, fs.ErrNotExist) {
						return &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeConflict, Object: f,
							Err:  fmt.Errorf("%s already exists; keeping it", f),
							Hint: "choose another prefix with --out, or replace the key pair with --force"}
					}
				}
			}
			priv, pub, err := trust.GenerateKey(trust.Alg(alg))
			if err != nil {
				return err
			}
			pk, err := trust.ParsePublicKey(pub)
			if err != nil {
				return err
			}
			id, err := trust.KeyID(pk)
			if err != nil {
				return err
			}
			// The private key is never visible with wider permissions: the
			// temporary file is created 0600 and renamed into place.
			if err := atomicfile.WriteFile(privFile, priv, 0o600); err != nil {
				return err
			}
			if err := atomicfile.WriteFile(pubFile, pub, 0o644); err != nil {
				return err
			}
			res := keygenResult{KeyID: id, Alg: alg, Private: privFile, Public: pubFile}
			if a.cfg.JSON {
				return a.printJSON(res)
			}
			a.printf("Wrote %s (private, keep it secret) and %s (public)\nkeyid %s (%s)\n", privFile, pubFile, id, alg)
			return nil
		},
	}
	cmd.Flags().StringVar(&prefix, "out", "wharf", "write PREFIX.key and PREFIX.pub")
	cmd.Flags().StringVar(&alg, "alg", string(trust.AlgECDSAP256), "key algorithm: ecdsa-p256 or ed25519")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite existing key files")
	return cmd
}

func validAlg(alg trust.Alg) bool {
	for _, a := range trust.Algs {
		if a == alg {
			return true
		}
	}
	return false
}
