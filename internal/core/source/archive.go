package source

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"strings"
)

const archiveHint = "the archive is refused; ask the marketplace owner to publish a plain zip of the plugin directory"

// fetchArchive downloads a zip (checking sha256 while streaming) and
// extracts it. Links, escaping names, more than MaxEntries entries or more
// than MaxBytes of content are refused; declared sizes are checked first and
// the bytes actually written are counted as well.
func (f *Fetcher) fetchArchive(ctx context.Context, req *Request, t *tree) (*Result, error) {
	s := req.Source
	want := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(s.SHA256), "sha256:"))
	if want != "" {
		if b, err := hex.DecodeString(want); err != nil || len(b) != sha256.Size {
			return nil, failf(req, "set sha256 to the 64 hex digits of the archive's SHA-256", "%w: sha256 %q is not a hex SHA-256", ErrUnsupported, s.SHA256)
		}
	}
	f.progressf("%s: downloading %s\n", req.Plugin, redactURL(s.URL))
	h := sha256.New()
	tmp, err := f.download(ctx, s.URL, t.limits.MaxBytes, h)
	if err != nil {
		return nil, fail(req, "check the archive URL", err)
	}
	defer removeTemp(tmp)
	if got := hex.EncodeToString(h.Sum(nil)); want != "" && got != want {
		return nil, failf(req, "the archive changed since the marketplace pinned it; ask the marketplace owner to update sha256",
			"%w: archive %s has sha256 %s, the marketplace entry says %s", ErrChecksum, redactURL(s.URL), got, want)
	}
	fi, err := tmp.Stat()
	if err != nil {
		return nil, fail(req, "", err)
	}
	zr, err := zip.NewReader(tmp, fi.Size())
	if err != nil {
		return nil, failf(req, archiveHint, "archive %s is not a zip: %w", redactURL(s.URL), err)
	}
	if err := extractZip(zr, t); err != nil {
		return nil, fail(req, archiveHint, err)
	}
	return &Result{URL: redactURL(s.URL)}, nil
}

func extractZip(zr *zip.Reader, t *tree) error {
	if n := len(zr.File); n > t.limits.MaxEntries {
		return fmt.Errorf("%w: archive has %d entries, more than %d", ErrTooManyEntries, n, t.limits.MaxEntries)
	}
	var declared uint64
	for _, zf := range zr.File {
		if _, err := CheckEntryPath(zf.Name); err != nil {
			return err
		}
		mode := zf.Mode()
		if mode&fs.ModeSymlink != 0 {
			return fmt.Errorf("%w: archive entry %q is a symlink", ErrLink, zf.Name)
		}
		if !mode.IsDir() && !mode.IsRegular() {
			return fmt.Errorf("%w: archive entry %q is a %s", ErrUnsupported, zf.Name, mode.Type())
		}
		declared += zf.UncompressedSize64
		if declared > uint64(t.limits.MaxBytes) {
			return fmt.Errorf("%w: archive declares more than %d bytes uncompressed", ErrTooLarge, t.limits.MaxBytes)
		}
	}
	for _, zf := range zr.File {
		if zf.Mode().IsDir() || strings.HasSuffix(zf.Name, "/") {
			if err := t.mkdir(zf.Name); err != nil {
				return err
			}
			continue
		}
		r, err := zf.Open()
		if err != nil {
			return fmt.Errorf("archive entry %q: %w", zf.Name, err)
		}
		err = t.file(zf.Name, zf.Mode()&0o100 != 0, r)
		r.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
