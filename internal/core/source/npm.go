package source

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/wharfhq/wharf/internal/core/lazyre"
)

var npmNameRE = lazyre.New(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$`)

const npmHint = "check the package name and version on the registry (WHARF_NPM_REGISTRY)"

type npmMeta struct {
	DistTags map[string]string `json:"dist-tags"`
	Versions map[string]struct {
		Version string `json:"version"`
		Dist    struct {
			Tarball   string `json:"tarball"`
			Integrity string `json:"integrity"`
			Shasum    string `json:"shasum"`
		} `json:"dist"`
	} `json:"versions"`
}

// fetchNPM resolves the package's version (an exact version or a dist-tag,
// default "latest"), downloads its tarball, checks dist.integrity (or the
// legacy shasum) while streaming, and extracts it without the first path
// element ("package/").
func (f *Fetcher) fetchNPM(ctx context.Context, req *Request, t *tree) (*Result, error) {
	s := req.Source
	if len(s.Package) > 214 || !npmNameRE.MatchString(s.Package) {
		return nil, failf(req, "write the package as name or @scope/name", "%w: npm package name %q", ErrUnsupported, s.Package)
	}
	reg := s.Registry
	if reg == "" {
		reg = f.Net.NPMRegistry
	}
	if reg == "" {
		reg = DefaultNPMRegistry
	}
	metaURL := strings.TrimRight(reg, "/") + "/" + strings.Replace(s.Package, "/", "%2f", 1)
	f.progressf("%s: resolving %s\n", req.Plugin, metaURL)
	resp, err := f.get(ctx, metaURL, "application/json")
	if err != nil {
		return nil, fail(req, npmHint, err)
	}
	var meta npmMeta
	err = json.NewDecoder(io.LimitReader(resp.Body, f.Net.MaxMetadata())).Decode(&meta)
	resp.Body.Close()
	if err != nil {
		return nil, failf(req, npmHint, "registry metadata for %s: %w", s.Package, err)
	}
	version := s.Version
	if version == "" {
		version = "latest"
	}
	if v, ok := meta.DistTags[version]; ok {
		version = v
	}
	ver, ok := meta.Versions[version]
	if !ok {
		if strings.ContainsAny(version, "^~<>=*| ") {
			return nil, failf(req, "pin an exact version or a dist-tag", "%w: npm version range %q (wharf fetches exact versions)", ErrUnsupported, s.Version)
		}
		return nil, failf(req, npmHint, "%w: %s has no version or dist-tag %q", ErrNotFound, s.Package, version)
	}
	check, err := npmChecker(ver.Dist.Integrity, ver.Dist.Shasum)
	if err != nil {
		return nil, failf(req, npmHint, "%s@%s: %w", s.Package, version, err)
	}
	f.progressf("%s: downloading %s\n", req.Plugin, redactURL(ver.Dist.Tarball))
	var hs []hash.Hash
	if check != nil {
		hs = append(hs, check.h)
	}
	tmp, err := f.download(ctx, ver.Dist.Tarball, t.limits.MaxBytes, hs...)
	if err != nil {
		return nil, fail(req, npmHint, err)
	}
	defer removeTemp(tmp)
	if check != nil {
		if got := check.h.Sum(nil); !bytesEqual(got, check.want) {
			return nil, failf(req, "the tarball does not match the registry's integrity; do not install it, and tell the registry owner",
				"%w: %s@%s tarball %s is %s, registry says %s", ErrChecksum, s.Package, version, redactURL(ver.Dist.Tarball),
				check.algo+"-"+base64.StdEncoding.EncodeToString(got), check.algo+"-"+base64.StdEncoding.EncodeToString(check.want))
		}
	}
	gz, err := gzip.NewReader(tmp)
	if err != nil {
		return nil, failf(req, npmHint, "%s@%s tarball is not gzip: %w", s.Package, version, err)
	}
	if err := extractTar(tar.NewReader(gz), t, true); err != nil {
		return nil, fail(req, "the package tarball is refused; ask the package owner to publish a plain npm pack tarball", err)
	}
	return &Result{Version: version, URL: redactURL(ver.Dist.Tarball)}, nil
}

type npmCheck struct {
	algo string
	h    hash.Hash
	want []byte
}

// npmChecker picks the strongest hash of an SRI string (sha512, else sha1),
// else the legacy hex shasum; nil when the registry gives neither.
func npmChecker(integrity, shasum string) (*npmCheck, error) {
	var sha1sum []byte
	for _, part := range strings.Fields(integrity) {
		algo, b64, ok := strings.Cut(part, "-")
		if !ok {
			continue
		}
		if i := strings.IndexByte(b64, '?'); i >= 0 {
			b64 = b64[:i]
		}
		sum, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, fmt.Errorf("dist.integrity %q: %w", part, err)
		}
		switch algo {
		case "sha512":
			if len(sum) != sha512.Size {
				return nil, fmt.Errorf("dist.integrity %q has the wrong length", part)
			}
			return &npmCheck{algo: "sha512", h: sha512.New(), want: sum}, nil
		case "sha1":
			sha1sum = sum
		}
	}
	if sha1sum == nil && shasum != "" {
		b, err := hex.DecodeString(shasum)
		if err != nil {
			return nil, fmt.Errorf("dist.shasum %q: %w", shasum, err)
		}
		sha1sum = b
	}
	if sha1sum != nil {
		return &npmCheck{algo: "sha1", h: sha1.New(), want: sha1sum}, nil
	}
	return nil, nil
}

func bytesEqual(a, b []byte) bool { return hex.EncodeToString(a) == hex.EncodeToString(b) }

// extractTar writes a tar stream; stripFirst drops the first path element
// (npm's "package/"). Links are refused, as are names that escape.
func extractTar(tr *tar.Reader, t *tree, stripFirst bool) error {
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("tar: %w", err)
		}
		raw := hdr.Name
		if _, err := CheckEntryPath(raw); err != nil {
			return err
		}
		name := raw
		if stripFirst {
			clean, _ := CheckEntryPath(raw)
			_, rest, ok := strings.Cut(clean, "/")
			if !ok {
				rest = ""
			}
			name = rest
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := t.mkdir(name); err != nil {
				return err
			}
		case tar.TypeReg, tar.TypeRegA:
			if name == "" {
				continue // a file at the top level, outside package/
			}
			if err := t.file(name, hdr.Mode&0o100 != 0, tr); err != nil {
				return err
			}
		case tar.TypeSymlink, tar.TypeLink:
			return fmt.Errorf("%w: tar entry %q is a link to %q", ErrLink, raw, hdr.Linkname)
		case tar.TypeXGlobalHeader, tar.TypeXHeader:
			continue
		default:
			return fmt.Errorf("%w: tar entry %q has type %q", ErrUnsupported, raw, hdr.Typeflag)
		}
	}
}
