package source

import (
	"errors"
	"fmt"

	"github.com/wharfhq/wharf/plugin"
)

// Sentinel errors; every *plugin.Error returned by Fetch wraps one of them
// when the cause is one of these classes, so callers can branch with errors.Is.
var (
	// ErrUnsafePath: an entry name or relative path would leave the root.
	ErrUnsafePath = errors.New("unsafe path")
	// ErrLink: a symlink or hard link that is refused (archives carry none;
	// elsewhere a link may not resolve outside the plugin root).
	ErrLink = errors.New("refused link")
	// ErrTooManyEntries: more entries than Limits.MaxEntries.
	ErrTooManyEntries = errors.New("too many entries")
	// ErrTooLarge: more bytes than Limits.MaxBytes (download or uncompressed).
	ErrTooLarge = errors.New("too large")
	// ErrChecksum: a sha256 or npm integrity value did not match the bytes.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrNotFound: the repository, ref, commit, directory or package version
	// does not exist.
	ErrNotFound = errors.New("not found")
	// ErrUnsupported: a source form or field value wharf does not handle.
	ErrUnsupported = errors.New("unsupported source")
	// ErrNotEmpty: the destination directory is not empty.
	ErrNotEmpty = errors.New("destination is not empty")
)

// fail builds the materialization error every Fetch failure returns.
func fail(req *Request, hint string, err error) error {
	return &plugin.Error{
		Layer:  plugin.LayerMaterialization,
		Type:   plugin.TypeSource,
		Object: req.object(),
		Err:    err,
		Hint:   hint,
	}
}

func failf(req *Request, hint, format string, args ...any) error {
	return fail(req, hint, fmt.Errorf(format, args...))
}
