package trust

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/plugin"
)

// MaxSignaturesFile bounds the detached signatures file.
const MaxSignaturesFile = 1 << 20

// FileSignature is one entry of the detached signatures file: a signature
// and, for one written by wharf sign, the statement it was made over. The
// recorded statement is what the signer meant, never something a verifier
// takes on trust: CheckSignatures builds the statement it expects and checks
// the signature against that. The record lets a signature whose key is not
// trusted here still be seen not to cover the content (its digest is not the
// tree's), and a directory be verified without naming its marketplace.
type FileSignature struct {
	Signature
	Statement *Statement `json:"statement,omitempty"`
}

// ParseSignatures decodes a signatures list (the detached file, or an
// entry's `signatures`): a JSON array of {"keyid","sig","statement"?}
// objects, nothing else. A recorded statement must be a complete
// wharf-plugin/v1 statement. name is used in error messages.
func ParseSignatures(data []byte, name string) ([]FileSignature, error) {
	if len(data) > MaxSignaturesFile {
		return nil, sigFileError(name, fmt.Errorf("%d bytes, more than the %d allowed", len(data), MaxSignaturesFile))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var sigs []FileSignature
	if err := dec.Decode(&sigs); err != nil {
		return nil, sigFileError(name, jsonErr(data, err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, sigFileError(name, errors.New("data after the JSON array"))
	}
	for i, s := range sigs {
		if s.KeyID == "" || s.Sig == "" {
			return nil, sigFileError(name, fmt.Errorf("signature %d: keyid and sig are both required", i))
		}
		if s.Statement != nil {
			if err := s.Statement.check(); err != nil {
				return nil, sigFileError(name, fmt.Errorf("signature %d: statement: %w", i, err))
			}
		}
	}
	return sigs, nil
}

// Plain returns the signatures without their recorded statements.
func Plain(sigs []FileSignature) []Signature {
	out := make([]Signature, len(sigs))
	for i, s := range sigs {
		out[i] = s.Signature
	}
	return out
}

// jsonErr adds the line of a syntax or type error.
func jsonErr(data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return err
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	return fmt.Errorf("line %d: %w", line, err)
}

// ReadSignatures reads the detached signatures of the plugin at root. A
// missing file is no signatures; a symlink or anything but a regular file
// is refused.
func ReadSignatures(root string) ([]FileSignature, error) {
	p := filepath.Join(root, filepath.FromSlash(SignaturesFile))
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, sigFileError(p, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, sigFileError(p, fmt.Errorf("not a regular file (%s)", fi.Mode().Type()))
	}
	f, err := openNoFollow(p)
	if err != nil {
		return nil, sigFileError(p, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSignaturesFile+1))
	if err != nil {
		return nil, sigFileError(p, err)
	}
	return ParseSignatures(data, p)
}

// WriteSignatures replaces the detached signatures file of the plugin at
// root, crash-safely: a reader sees the old file or the new one, never a
// partial one.
func WriteSignatures(root string, sigs []FileSignature) error {
	if sigs == nil {
		sigs = []FileSignature{}
	}
	data, err := json.MarshalIndent(sigs, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	dir := filepath.Join(root, ".claude-plugin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return sigFileError(dir, err)
	}
	return writeSigFile(filepath.Join(root, filepath.FromSlash(SignaturesFile)), data, 0o644)
}

// AddSignature adds sig to the detached signatures of root, replacing an
// earlier signature by the same key. It records no statement: wharf sign
// uses AddSigned.
func AddSignature(root string, sig Signature) error {
	return addFileSignature(root, FileSignature{Signature: sig})
}

// AddSigned adds sig, made over st, to the detached signatures of root with
// st recorded beside it, replacing an earlier signature by the same key.
func AddSigned(root string, sig Signature, st Statement) error {
	return addFileSignature(root, FileSignature{Signature: sig, Statement: &st})
}

func addFileSignature(root string, fs FileSignature) error {
	sigs, err := ReadSignatures(root)
	if err != nil {
		return err
	}
	out := make([]FileSignature, 0, len(sigs)+1)
	for _, s := range sigs {
		if s.KeyID != fs.KeyID {
			out = append(out, s)
		}
	}
	return WriteSignatures(root, append(out, fs))
}

// MergeSignature returns sigs with sig added, replacing one by the same key.
func MergeSignature(sigs []Signature, sig Signature) []Signature {
	out := make([]Signature, 0, len(sigs)+1)
	for _, s := range sigs {
		if s.KeyID != sig.KeyID {
			out = append(out, s)
		}
	}
	return append(out, sig)
}

// writeSigFile writes a signatures file crash-safely.
func writeSigFile(name string, data []byte, perm fs.FileMode) error {
	if err := atomicfile.WriteFile(name, data, perm); err != nil {
		return sigFileError(name, err)
	}
	return nil
}

func sigFileError(name string, err error) error {
	return &plugin.Error{Layer: plugin.LayerTrust, Type: plugin.TypeTrustRejected, Object: name, Err: err,
		Hint: "the signatures file is a JSON array of {\"keyid\",\"sig\",\"statement\"?}; re-create it with: wharf sign <plugin-dir> --key <key> --marketplace <name>"}
}
