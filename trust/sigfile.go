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

	"github.com/wharfhq/wharf/atomicfile"
	"github.com/wharfhq/wharf/plugin"
)

// MaxSignaturesFile bounds the detached signatures file.
const MaxSignaturesFile = 1 << 20

// ParseSignatures decodes a signatures list (the detached file, or an
// entry's `signatures`): a JSON array of {"keyid","sig"} objects, nothing
// else. name is used in error messages.
func ParseSignatures(data []byte, name string) ([]Signature, error) {
	if len(data) > MaxSignaturesFile {
		return nil, sigFileError(name, fmt.Errorf("%d bytes, more than the %d allowed", len(data), MaxSignaturesFile))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var sigs []Signature
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
	}
	return sigs, nil
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
func ReadSignatures(root string) ([]Signature, error) {
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
func WriteSignatures(root string, sigs []Signature) error {
	if sigs == nil {
		sigs = []Signature{}
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
// earlier signature by the same key.
func AddSignature(root string, sig Signature) error {
	sigs, err := ReadSignatures(root)
	if err != nil {
		return err
	}
	return WriteSignatures(root, MergeSignature(sigs, sig))
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
		Hint: "the signatures file is a JSON array of {\"keyid\",\"sig\"}; re-create it with: wharf sign <plugin-dir> --key <key>"}
}
