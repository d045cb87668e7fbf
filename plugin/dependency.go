package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Dependency is one entry of a plugin's "dependencies": "b" (same
// marketplace as the dependent), "b@mkt", or {name, marketplace?, version?}.
// Version is kept for display only: wharf has presence semantics and ignores
// version ranges on purpose.
type Dependency struct {
	Name        string `json:"name"`
	Marketplace string `json:"marketplace,omitempty"`
	Version     string `json:"version,omitempty"`
}

// UnmarshalJSON accepts the string and object forms.
func (d *Dependency) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		dep, err := ParseDependency(s)
		if err != nil {
			return err
		}
		*d = dep
		return nil
	}
	type plain Dependency
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("dependency must be a string \"name[@marketplace]\" or an object {name, marketplace?, version?}: %w", err)
	}
	if err := ValidateName(p.Name); err != nil {
		return fmt.Errorf("dependency name: %w", err)
	}
	if p.Marketplace != "" {
		if err := ValidateName(p.Marketplace); err != nil {
			return fmt.Errorf("dependency marketplace: %w", err)
		}
	}
	*d = Dependency(p)
	return nil
}

// MarshalJSON writes the short string form when no version is given.
func (d Dependency) MarshalJSON() ([]byte, error) {
	if d.Version == "" {
		return json.Marshal(d.String())
	}
	type plain Dependency
	return json.Marshal(plain(d))
}

// ParseDependency parses the string form "b" or "b@mkt".
func ParseDependency(s string) (Dependency, error) {
	name, mkt, _ := strings.Cut(s, "@")
	if err := ValidateName(name); err != nil {
		return Dependency{}, fmt.Errorf("dependency %q: %w", s, err)
	}
	if mkt != "" || strings.HasSuffix(s, "@") {
		if err := ValidateName(mkt); err != nil {
			return Dependency{}, fmt.Errorf("dependency %q: marketplace: %w", s, err)
		}
	}
	return Dependency{Name: name, Marketplace: mkt}, nil
}

// Resolve returns the ID this dependency names, given the dependent's
// marketplace (a bare name means the same marketplace).
func (d Dependency) Resolve(dependentMarketplace string) ID {
	if d.Marketplace == "" {
		return ID{Name: d.Name, Source: dependentMarketplace}
	}
	return ID{Name: d.Name, Source: d.Marketplace}
}

func (d Dependency) String() string {
	if d.Marketplace == "" {
		return d.Name
	}
	return d.Name + "@" + d.Marketplace
}
