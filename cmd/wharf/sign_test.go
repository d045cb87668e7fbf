package main

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Rewriting a marketplace.json keeps what it says: decoding the rewrite gives
// the same values as decoding the original, key order included.
func FuzzOrderedJSON(f *testing.F) {
	f.Add([]byte(`{"name":"corp","owner":{"name":"IT"},"plugins":[{"name":"a","source":"./a","n":1.50e3}]}`))
	f.Add([]byte(`{"b":1,"a":2,"b":3}`))
	f.Add([]byte(`["\u003c&>", true, null, -0, "\ud83d\ude00"]`))
	f.Add([]byte(`{"a":{"b":{"c":[[[]]]}}} x`))
	f.Add([]byte(`{"a":`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := decodeOrdered(data)
		if err != nil {
			return
		}
		out, err := encodeOrdered(v, "  ")
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		v2, err := decodeOrdered(out)
		if err != nil {
			t.Fatalf("the rewrite does not parse: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(v, v2) {
			t.Fatalf("values changed:\n%#v\n%#v", v, v2)
		}
		var a, b any
		if json.Unmarshal(data, &a) == nil {
			if err := json.Unmarshal(out, &b); err != nil || !reflect.DeepEqual(a, b) {
				t.Fatalf("meaning changed: %v\n%v\n%v", err, a, b)
			}
		}
	})
}

func TestIndentOf(t *testing.T) {
	for in, want := range map[string]string{
		"{\n    \"a\": 1\n}": "    ",
		"{\n\t\"a\": 1\n}":   "\t",
		`{"a":1}`:            "  ",
	} {
		if got := indentOf([]byte(in)); got != want {
			t.Errorf("indentOf(%q) = %q, want %q", in, got, want)
		}
	}
}
