package plugin

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Special sources that never name a marketplace.
const (
	SourceBuiltin = "builtin" // shipped with the agent
	SourceLocal   = "local"
	SourceInline  = "inline" // a --plugin-dir for one session, never persisted
)

// maxNameLen bounds plugin and marketplace names; they become path elements.
const maxNameLen = 128

// ID identifies a plugin as name@source. The same name from two sources is two
// different plugins. The zero value is not a valid ID.
type ID struct {
	Name   string
	Source string // a marketplace name, or builtin/local/inline
}

// ParseID parses "name@source". Both parts must be valid names.
func ParseID(s string) (ID, error) {
	name, source, ok := strings.Cut(s, "@")
	if !ok {
		return ID{}, &Error{Layer: LayerIntent, Type: TypeInvalidID, Object: s,
			Err: fmt.Errorf("plugin id %q has no @marketplace", s), Hint: "write it as name@marketplace, e.g. deploy@corp"}
	}
	if strings.Contains(source, "@") {
		return ID{}, &Error{Layer: LayerIntent, Type: TypeInvalidID, Object: s,
			Err: fmt.Errorf("plugin id %q has more than one @", s), Hint: "write it as name@marketplace, e.g. deploy@corp"}
	}
	id := ID{Name: name, Source: source}
	if err := id.Validate(); err != nil {
		return ID{}, err
	}
	return id, nil
}

// MustParseID is ParseID for constants in tests and fixtures; it panics on error.
func MustParseID(s string) ID {
	id, err := ParseID(s)
	if err != nil {
		panic(err)
	}
	return id
}

// Validate reports whether both parts are valid names.
func (id ID) Validate() error {
	if err := ValidateName(id.Name); err != nil {
		return &Error{Layer: LayerIntent, Type: TypeInvalidID, Object: id.String(),
			Err: fmt.Errorf("plugin name: %w", err)}
	}
	if err := ValidateName(id.Source); err != nil {
		return &Error{Layer: LayerIntent, Type: TypeInvalidID, Object: id.String(),
			Err: fmt.Errorf("marketplace name: %w", err)}
	}
	return nil
}

// String prints the id as name@source.
func (id ID) String() string { return id.Name + "@" + id.Source }

// IsZero reports whether id is the zero ID.
func (id ID) IsZero() bool { return id.Name == "" && id.Source == "" }

// MarshalText implements encoding.TextMarshaler so IDs work as JSON keys.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (id *ID) UnmarshalText(b []byte) error {
	p, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = p
	return nil
}

// ValidateName checks a plugin or marketplace name before it is used as a path
// element: 1-128 bytes of ASCII letters, digits, '.', '_' and '-', starting
// with a letter or digit. This admits every real marketplace's names and
// excludes '/', '..', NUL and every other byte that could escape a directory.
func ValidateName(s string) error {
	if s == "" {
		return fmt.Errorf("empty name")
	}
	if len(s) > maxNameLen {
		return fmt.Errorf("name %.20q... is longer than %d bytes", s, maxNameLen)
	}
	if !isAlnum(s[0]) {
		return fmt.Errorf("name %q must start with a letter or digit", s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return fmt.Errorf("name %q contains %q; only letters, digits, '.', '_' and '-' are allowed", s, c)
		}
	}
	return nil
}

// SanitizeVersion returns a version string that is safe as one path element.
// Versions come from manifests (hostile input): "1.2.0", "v2", a git SHA or
// "unknown" are returned as they are; anything with '/', '\\', "..", control
// bytes, invalid UTF-8 or over 128 bytes is refused rather than rewritten, so
// that two different versions can never map to one directory.
func SanitizeVersion(v string) (string, error) {
	if v == "" {
		return "", fmt.Errorf("empty version")
	}
	if len(v) > maxNameLen {
		return "", fmt.Errorf("version %.20q... is longer than %d bytes", v, maxNameLen)
	}
	if !utf8.ValidString(v) {
		return "", fmt.Errorf("version %q is not valid UTF-8", v)
	}
	if v == "." || v == ".." || strings.Contains(v, "..") {
		return "", fmt.Errorf("version %q contains \"..\"", v)
	}
	if !isAlnum(v[0]) {
		return "", fmt.Errorf("version %q must start with a letter or digit", v)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !isAlnum(c) && c != '.' && c != '_' && c != '-' && c != '+' {
			return "", fmt.Errorf("version %q contains %q; only letters, digits, '.', '_', '-' and '+' are allowed", v, c)
		}
	}
	return v, nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
