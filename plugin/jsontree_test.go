package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"pgregory.net/rapid"
)

// treeValue is the value a node stands for, in encoding/json's terms with
// UseNumber: the last of duplicate keys wins, as there.
func treeValue(n *node) any {
	switch n.kind {
	case kindNull:
		return nil
	case kindBool:
		return n.boolean
	case kindNumber:
		return json.Number(n.str)
	case kindString:
		return n.str
	case kindArray:
		out := make([]any, len(n.elems))
		for i, e := range n.elems {
			out[i] = treeValue(e)
		}
		return out
	}
	out := make(map[string]any, len(n.members))
	for _, m := range n.members {
		out[m.key] = treeValue(m.val)
	}
	return out
}

func decodeJSON(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("encoding/json cannot read %q: %v", b, err)
	}
	return v
}

// checkTree checks every node of the tree parsed from src against
// encoding/json: the node's span is exactly one JSON value, starting at a
// value's first byte, and it decodes to what the node says; a member's key
// offset is its quoted key; children lie inside their parent, in order.
func checkTree(t testing.TB, src []byte, n *node, lo, hi int) {
	t.Helper()
	if n.off < lo || n.end > hi || n.off >= n.end {
		t.Fatalf("node %v spans [%d,%d) outside [%d,%d)", n.kind, n.off, n.end, lo, hi)
	}
	if c := src[n.off]; c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ':' {
		t.Fatalf("node at %d starts with %q", n.off, c)
	}
	span := src[n.off:n.end]
	if !json.Valid(span) {
		t.Fatalf("node span %q is not one JSON value", span)
	}
	if got, want := treeValue(n), decodeJSON(t, span); !reflect.DeepEqual(got, want) {
		t.Fatalf("node at %d is %#v; encoding/json reads %#v", n.off, got, want)
	}
	at := n.off + 1
	for _, m := range n.members {
		if m.keyOff < at {
			t.Fatalf("key %q at %d before %d", m.key, m.keyOff, at)
		}
		var k string
		dec := json.NewDecoder(bytes.NewReader(src[m.keyOff:n.end]))
		if err := dec.Decode(&k); err != nil || k != m.key {
			t.Fatalf("key offset %d reads %q (%v), want %q", m.keyOff, k, err, m.key)
		}
		checkTree(t, src, m.val, m.keyOff, n.end)
		at = m.val.end
	}
	for _, e := range n.elems {
		checkTree(t, src, e, at, n.end)
		at = e.end
	}
}

var treeCases = []string{
	`null`, `true`, `false`, `0`, `-1.5e+10`, `""`, `"a"`, `[]`, `{}`, `[[]]`, `{"":{}}`,
	`  {"a" : [1, 2 ,3], "b":{"c":null}, "d":"x\"y\\z\u00e9\ud83d\ude00", "e":true}  `,
	`{"a":1,"a":2,"b":[{"a":"dup"},{"a":"dup","a":"last"}]}`,
	"\xEF\xBB\xBF{\"bom\":1}",
	`["caf\u00e9", "日本語", "tab\tescaped\\t", "/\/"]`,
	`{"plugins":[{"name":"a","source":"./a","author":{"name":"n","email":"e@x"},"keywords":["k1","k2"]}]}`,
}

func TestParseJSONTreeMatchesEncodingJSON(t *testing.T) {
	check := func(t *testing.T, src []byte) {
		n, err := parseJSON(src, "f.json")
		if err != nil {
			t.Fatalf("parseJSON(%q): %v", src, err)
		}
		body := bytes.TrimPrefix(src, []byte("\xEF\xBB\xBF"))
		off := len(src) - len(body)
		checkTree(t, src, n, off, len(src))
	}
	for i, c := range treeCases {
		t.Run(fmt.Sprint(i), func(t *testing.T) { check(t, []byte(c)) })
	}
	// Every JSON file of the real marketplaces; they skip when absent.
	dir := realworldDir(t)
	files := 0
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil || !json.Valid(src) {
			return err
		}
		files++
		t.Run(strings.TrimPrefix(p, dir), func(t *testing.T) { check(t, src) })
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("only %d JSON files under %s", files, dir)
	}
}

func FuzzParseJSONTree(f *testing.F) {
	for _, c := range treeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		n, err := parseJSON(src, "f.json")
		if err != nil {
			return
		}
		body := bytes.TrimPrefix(src, []byte("\xEF\xBB\xBF"))
		checkTree(t, src, n, len(src)-len(body), len(src))
	})
}

// The duplicate check compares keys one by one up to smallObject members
// and through a map above; both must flag the same members.
func TestHasEarlierKeyEqualsMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		keys := rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b", "c", "name", "", "é"}), 0, 3*smallObject).Draw(t, "keys")
		members := make([]member, len(keys))
		for i, k := range keys {
			members[i] = member{key: k, keyOff: i}
		}
		dup := duplicateKeys(members)
		for i := range members {
			if hasEarlierKey(members, i) != dup[i] {
				t.Fatalf("member %d of %q: one by one %v, map %v", i, keys, hasEarlierKey(members, i), dup[i])
			}
		}
	})
}

// An object above smallObject members still warns once per repeated key,
// at the repeat.
func TestDuplicateKeysInALargeObject(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"name":"m","owner":{"name":"o"},"plugins":[],"metadata":{`)
	for i := 0; i <= smallObject; i++ {
		fmt.Fprintf(&b, `"k%d":1,`, i)
	}
	b.WriteString(`"k3":2}}`)
	_, diags, err := ParseMarketplace([]byte(b.String()), "m.json")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range diags {
		if strings.Contains(d.Message, "duplicate key") {
			n++
			if d.Field != "metadata.k3" {
				t.Errorf("duplicate reported at %q, want metadata.k3", d.Field)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d duplicate warnings, want 1: %v", n, diags)
	}
}

// readSized returns what io.ReadAll returns whatever the stat said: the
// true size, less (the file grew) or more (it shrank), in reads of any
// length.
func TestReadSizedEqualsReadAll(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		data := rapid.SliceOfN(rapid.Byte(), 0, 5000).Draw(t, "data")
		size := int64(len(data)) + int64(rapid.IntRange(-len(data)-10, 100).Draw(t, "skew"))
		var r io.Reader = bytes.NewReader(data)
		if rapid.Bool().Draw(t, "oneByte") {
			r = iotest.OneByteReader(r)
		}
		got, err := readSized(r, size)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("readSized(size %d) = %d bytes, %v; want the %d bytes", size, len(got), err, len(data))
		}
	})
	_, err := readSized(iotest.ErrReader(io.ErrUnexpectedEOF), 10)
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("readSized of a failing reader: %v", err)
	}
}
