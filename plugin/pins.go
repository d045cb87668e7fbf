package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// PinsFileName is the file beside marketplace.json (in .claude-plugin/)
// where a wharf channel publishes each plugin's pinned digest and where it
// comes from. Claude Code ignores the file, so its validator finds no
// unknown keys in marketplace.json; wharf reads the pins as the entries'
// integrity.
const PinsFileName = "wharf.json"

// Pins is a channel's pins file.
type Pins struct {
	Channel string         `json:"channel"`
	Plugins map[string]Pin `json:"plugins"`
}

// Pin is one plugin's record: Integrity is its "w1:" digest in the
// channel; the rest says where it came from. ClaudeName, when set, is why
// Claude Code's validator refuses the plugin's name.
type Pin struct {
	Integrity    string `json:"integrity"`
	Origin       string `json:"origin,omitempty"`
	Source       string `json:"source,omitempty"`
	Commit       string `json:"commit,omitempty"`
	OriginDigest string `json:"originDigest,omitempty"`
	ClaudeName   string `json:"claudeName,omitempty"`
}

// ParsePins parses a pins file. Unknown keys are refused, and so is a pin
// whose integrity is not a "w1:" digest: a pins file that cannot be read
// must not leave plugins unpinned.
func ParsePins(data []byte, file string) (*Pins, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Pins
	if err := dec.Decode(&p); err != nil {
		return nil, &Error{Layer: LayerMaterialization, Type: TypeManifestParse, Object: file, Err: err,
			Hint: "the channel publishes this file; rebuild the channel"}
	}
	if dec.More() {
		return nil, &Error{Layer: LayerMaterialization, Type: TypeManifestParse, Object: file, Err: errors.New("data after the JSON object"),
			Hint: "the channel publishes this file; rebuild the channel"}
	}
	for name, pin := range p.Plugins {
		if msg := checkIntegrity(pin.Integrity); msg != "" {
			return nil, &Error{Layer: LayerMaterialization, Type: TypeManifestParse, Object: file,
				Err: fmt.Errorf("plugins[%q].integrity: %s", name, msg), Hint: "the channel publishes this file; rebuild the channel"}
		}
	}
	return &p, nil
}

// applyPins reads the pins file beside the marketplace.json at path, if
// there is one, and gives each entry without an integrity its pin. An
// entry whose own integrity differs from its pin is an error.
func applyPins(m *Marketplace, path string) ([]Diagnostic, error) {
	file := filepath.Join(filepath.Dir(path), PinsFileName)
	data, err := readManifestFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	pins, err := ParsePins(data, file)
	if err != nil {
		return nil, err
	}
	for i := range m.Plugins {
		e := &m.Plugins[i]
		pin, ok := pins.Plugins[e.Name]
		if !ok {
			continue
		}
		switch {
		case e.Integrity == "":
			e.Integrity = pin.Integrity
		case e.Integrity != pin.Integrity:
			d := Diagnostic{File: file, Field: fmt.Sprintf("plugins[%q].integrity", e.Name), Severity: SeverityError,
				Message: fmt.Sprintf("pin %s differs from the entry's integrity %s in marketplace.json", pin.Integrity, e.Integrity)}
			return []Diagnostic{d}, &Error{Layer: LayerMaterialization, Type: TypeManifestInvalid, Object: file,
				Err: errors.New(d.Message), Hint: "the channel publishes both; rebuild the channel"}
		}
	}
	return nil, nil
}
