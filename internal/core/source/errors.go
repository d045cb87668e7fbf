package source

import (
	"errors"
	"fmt"

	"github.com/wharfhq/wharf/internal/core/fetch"
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
	ErrTooLarge = fetch.ErrTooLarge
	// ErrChecksum: a sha256 or npm integrity value did not match the bytes.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrNotFound: the repository, ref, commit, directory or package version
	// does not exist.
	ErrNotFound = fetch.ErrNotFound
	// ErrUnsupported: a source form or field value wharf does not handle.
	ErrUnsupported = fetch.ErrUnsupported
	// ErrNotEmpty: the destination directory is not empty.
	ErrNotEmpty = errors.New("destination is not empty")
)

// DiskFullHint is the hint of every failure caused by a full disk or an
// exhausted quota, whatever the step that met it.
const DiskFullHint = "the disk is full: free space on the file system holding WHARF_HOME (wharf gc removes versions no longer used), then retry"

// fail builds the materialization error every Fetch failure returns. A
// full disk gets the disk-full hint: no entry of the plugin is at fault.
func fail(req *Request, hint string, err error) error {
	if diskFull(err) {
		hint = DiskFullHint
	}
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
