package source

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// CheckEntryPath validates a path that comes from outside (an archive entry, a
// git tree entry, a relative source) before it becomes a file name under the
// destination root. It accepts relative paths with '/' separators and returns
// them cleaned ("./a//b/" → "a/b"); "" or "." means the root itself. It
// refuses absolute paths, Windows drive and UNC forms, backslashes, any ".."
// element, NUL and other control bytes, and invalid UTF-8, so a path it
// accepts can never name anything outside the root.
func CheckEntryPath(name string) (string, error) {
	if len(name) > 4096 {
		return "", fmt.Errorf("%w: %.40q... is longer than 4096 bytes", ErrUnsafePath, name)
	}
	if !utf8.ValidString(name) {
		return "", fmt.Errorf("%w: %q is not valid UTF-8", ErrUnsafePath, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c == 0x7f {
			return "", fmt.Errorf("%w: %q contains control byte %#x", ErrUnsafePath, name, c)
		}
		if c == '\\' {
			return "", fmt.Errorf("%w: %q contains a backslash", ErrUnsafePath, name)
		}
	}
	if strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("%w: %q is an absolute path", ErrUnsafePath, name)
	}
	if len(name) >= 2 && name[1] == ':' {
		return "", fmt.Errorf("%w: %q looks like a Windows drive path", ErrUnsafePath, name)
	}
	var parts []string
	for _, p := range strings.Split(name, "/") {
		switch p {
		case "", ".":
			continue
		case "..":
			return "", fmt.Errorf("%w: %q contains \"..\"", ErrUnsafePath, name)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "/"), nil
}
