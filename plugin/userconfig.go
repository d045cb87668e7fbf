package plugin

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
)

// UserConfigOption is one entry of a plugin's userConfig: a value Claude
// Code asks the user for when the plugin is enabled, substituted as
// ${user_config.KEY} in MCP and LSP server configurations and hook
// commands. A sensitive value is kept out of ordinary files.
type UserConfigOption struct {
	Key         string          `json:"key"`
	Type        string          `json:"type,omitempty"` // string (default), number, boolean, directory or file
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	Sensitive   bool            `json:"sensitive,omitempty"`
	Required    bool            `json:"required,omitempty"`
	Default     json.RawMessage `json:"default,omitempty"`
}

// UserConfigOptions returns the options of the manifest's userConfig, in
// key order. A malformed option is an error naming it.
func (m *Manifest) UserConfigOptions() ([]UserConfigOption, error) {
	if len(m.UserConfig) == 0 {
		return nil, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(m.UserConfig, &raw); err != nil {
		return nil, fmt.Errorf("userConfig: expected an object of options: %v", err)
	}
	out := make([]UserConfigOption, 0, len(raw))
	for k, v := range raw {
		if !validRefName(k) || len(k) > 128 {
			return nil, fmt.Errorf("userConfig.%s: option keys must be identifiers (letters, digits, '_')", k)
		}
		o := UserConfigOption{Key: k}
		if err := json.Unmarshal(v, &o); err != nil {
			return nil, fmt.Errorf("userConfig.%s: %v", k, err)
		}
		o.Key = k
		switch o.Type {
		case "", "string", "number", "boolean", "directory", "file":
		default:
			return nil, fmt.Errorf("userConfig.%s.type: unknown type %q; expected string, number, boolean, directory or file", k, o.Type)
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// CheckValue says whether value suits the option's type.
func (o UserConfigOption) CheckValue(value string) error {
	switch o.Type {
	case "number":
		if _, err := strconv.ParseFloat(value, 64); err != nil {
			return fmt.Errorf("%s: %q is not a number", o.Key, value)
		}
	case "boolean":
		if value != "true" && value != "false" {
			return fmt.Errorf("%s: %q is not true or false", o.Key, value)
		}
	}
	return nil
}

// DefaultString is the option's default as substituted text ("" when none).
func (o UserConfigOption) DefaultString() string {
	if len(o.Default) == 0 || string(o.Default) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(o.Default, &s) == nil {
		return s
	}
	return string(o.Default)
}
