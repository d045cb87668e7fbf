package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseLayerSettings: a settings file is accepted only when it is one
// JSON object, and what is accepted is that object.
func FuzzParseLayerSettings(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"blockedMarketplaces": ["x"]}`, "{\n \"a\": 1,\n \"a\": 2\n}", `[]`, `"x"`, `null`, ``, `{"a":}`,
		`{} {}`, `{"a": {"b": [1, 2, {"c": null}]}}`, " \n{\"a\": true}\n", `{"a": 1`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		raw, err := parseLayerSettings(data)
		var m map[string]json.RawMessage
		uerr := json.Unmarshal(data, &m)
		if err != nil {
			return
		}
		if uerr != nil || m == nil {
			t.Fatalf("accepted %q, which is not one JSON object (%v)", data, uerr)
		}
		if !bytes.Equal(raw, bytes.TrimSpace(data)) {
			t.Fatalf("accepted %q as %q", data, raw)
		}
	})
}

func TestParseLayerSettingsErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                          "empty",
		"[1]":                       "not a JSON object",
		"{\"a\": 1,\n\"a\": 2}":     `key "a" appears twice`,
		"{\n\"a\": 1,\n\"b\": ]\n}": "line 3",
		"{} {}":                     "more than one JSON value",
	} {
		_, err := parseLayerSettings([]byte(in))
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("parseLayerSettings(%q) = %v, want an error with %q", in, err, want)
		}
	}
}
