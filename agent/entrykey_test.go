package agent

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/plugin"
	"pgregory.net/rapid"
)

// entryKey is the index key of one fixed record and expansion with entry
// as its marketplace entry.
func entryKey(entry *plugin.Entry) string {
	r := cache.Record{ID: plugin.ID{Name: "ops", Source: "corp"}, Version: "1.0.0", InstallPath: "/c/corp/ops/1.0.0", Digest: "w1:abc"}
	return indexKey(r, entry, expander{root: r.InstallPath, data: "/d", project: "/p"})
}

// variant is one way to make a value of some type differ from its zero
// value: set changes a settable zero value of that type.
type variant struct {
	path string
	set  func(v reflect.Value)
}

// variants lists, for every leaf reachable from t through exported struct
// fields, pointers, slices and maps, a change of that leaf alone: a pointer
// made non-nil, a slice or map made empty and then given one element, a
// string or raw message given content, a flag set. An unknown kind fails,
// so that a new field of a kind the key cannot cover is noticed here.
func variants(tb testing.TB, t reflect.Type, path string, depth int) []variant {
	if depth > 8 {
		tb.Fatalf("%s: types nest deeper than the key walk expects", path)
	}
	var out []variant
	switch t.Kind() {
	case reflect.String:
		out = append(out, variant{path, func(v reflect.Value) { v.SetString("x") }})
	case reflect.Bool:
		out = append(out, variant{path, func(v reflect.Value) { v.SetBool(true) }})
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		out = append(out, variant{path, func(v reflect.Value) { v.SetInt(1) }})
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		out = append(out, variant{path, func(v reflect.Value) { v.SetUint(1) }})
	case reflect.Float32, reflect.Float64:
		out = append(out, variant{path, func(v reflect.Value) { v.SetFloat(1) }})
	case reflect.Pointer:
		out = append(out, variant{path + "=&zero", func(v reflect.Value) { v.Set(reflect.New(t.Elem())) }})
		for _, sub := range variants(tb, t.Elem(), path+".*", depth+1) {
			out = append(out, variant{sub.path, func(v reflect.Value) {
				p := reflect.New(t.Elem())
				sub.set(p.Elem())
				v.Set(p)
			}})
		}
	case reflect.Slice:
		out = append(out, variant{path + "=[]", func(v reflect.Value) { v.Set(reflect.MakeSlice(t, 0, 0)) }})
		if t.Elem().Kind() == reflect.Uint8 {
			// A raw message or other bytes: given content.
			out = append(out, variant{path + "=`1`", func(v reflect.Value) { v.SetBytes([]byte("1")) }})
			break
		}
		out = append(out, variant{path + "[0]=zero", func(v reflect.Value) { v.Set(reflect.MakeSlice(t, 1, 1)) }})
		for _, sub := range variants(tb, t.Elem(), path+"[0]", depth+1) {
			out = append(out, variant{sub.path, func(v reflect.Value) {
				s := reflect.MakeSlice(t, 1, 1)
				sub.set(s.Index(0))
				v.Set(s)
			}})
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			tb.Fatalf("%s: map key %s", path, t.Key())
		}
		elem := func(set func(reflect.Value)) func(v reflect.Value) {
			return func(v reflect.Value) {
				m := reflect.MakeMap(t)
				e := reflect.New(t.Elem()).Elem()
				if set != nil {
					set(e)
				}
				m.SetMapIndex(reflect.ValueOf("k").Convert(t.Key()), e)
				v.Set(m)
			}
		}
		out = append(out, variant{path + "={}", func(v reflect.Value) { v.Set(reflect.MakeMap(t)) }})
		out = append(out, variant{path + "[k]=zero", elem(nil)})
		for _, sub := range variants(tb, t.Elem(), path+"[k]", depth+1) {
			out = append(out, variant{sub.path, elem(sub.set)})
		}
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			for _, sub := range variants(tb, f.Type, path+"."+f.Name, depth+1) {
				out = append(out, variant{sub.path, func(v reflect.Value) { sub.set(v.Field(i)) }})
			}
		}
	default:
		tb.Fatalf("%s: the key walk does not know kind %s", path, t.Kind())
	}
	return out
}

// Every exported field of plugin.Entry, and of every type in it, reaches
// the index key: changing any one leaf from the zero entry changes the key,
// and no two such changes give the same key (a field written in another's
// place, or not at all, would). A field added to plugin.Entry or a type it
// holds and not written by appendEntry fails here.
func TestIndexKeyCoversEveryEntryField(t *testing.T) {
	vs := variants(t, reflect.TypeFor[plugin.Entry](), "Entry", 0)
	paths := map[string]bool{}
	for _, v := range vs {
		paths[v.path] = true
	}
	for _, p := range []string{"Entry.Manifest.Name", "Entry.Manifest.Author.*.URL", "Entry.Manifest.Hooks.Inline=`1`",
		"Entry.Manifest.CommandObjects[k].Description", "Entry.Manifest.Extra[k]=`1`", "Entry.Source.SHA256", "Entry.Strict=&zero", "Entry.Signatures[0].Sig"} {
		if !paths[p] {
			t.Fatalf("the walk of plugin.Entry has no variant %s (%d variants)", p, len(vs))
		}
	}
	seen := map[string]string{entryKey(nil): "nil entry", entryKey(&plugin.Entry{}): "zero entry"}
	if len(seen) != 2 {
		t.Fatal("a nil entry and a zero entry have the same key")
	}
	for _, v := range vs {
		var e plugin.Entry
		v.set(reflect.ValueOf(&e).Elem())
		if reflect.ValueOf(e).IsZero() {
			t.Fatalf("%s: the variant left the entry zero", v.path)
		}
		k := entryKey(&e)
		if other, ok := seen[k]; ok {
			t.Errorf("%s gives the key of %s: appendEntry does not write it (or writes it in the place of another)", v.path, other)
			continue
		}
		seen[k] = v.path
	}
}

// entries draws marketplace entries from small pools, so that equal
// entries, and entries whose JSON is equal, come up often; strings include
// ones the JSON form writes alike ("\xff" and "\ufffd") and raw messages
// ones it compacts alike.
func entries() *rapid.Generator[*plugin.Entry] {
	str := rapid.SampledFrom([]string{"", "a", "b", "a\"b", "<", "\xff", "\ufffd"})
	strs := rapid.OneOf(rapid.Just[[]string](nil), rapid.SliceOfN(str, 0, 2))
	raw := rapid.OneOf(rapid.Just[json.RawMessage](nil), rapid.Map(rapid.SampledFrom([]string{"{}", "{ }", `{"a":1}`, `{"a": 1}`, "[1]", `"a"`}),
		func(s string) json.RawMessage { return json.RawMessage(s) }))
	flag := rapid.SampledFrom([]*bool{nil, new(bool), func() *bool { v := true; return &v }()})
	return rapid.Custom(func(t *rapid.T) *plugin.Entry {
		if rapid.IntRange(0, 20).Draw(t, "nil") == 0 {
			return nil
		}
		e := &plugin.Entry{}
		m := &e.Manifest
		m.Name = str.Draw(t, "name")
		m.DisplayName = str.Draw(t, "displayName")
		m.Version = str.Draw(t, "version")
		m.Description = str.Draw(t, "description")
		if rapid.Bool().Draw(t, "author") {
			m.Author = &plugin.Author{Name: str.Draw(t, "author.name"), Email: str.Draw(t, "author.email"), URL: str.Draw(t, "author.url")}
		}
		m.Homepage = str.Draw(t, "homepage")
		m.Repository = str.Draw(t, "repository")
		m.License = str.Draw(t, "license")
		m.Keywords = strs.Draw(t, "keywords")
		m.DefaultEnabled = flag.Draw(t, "defaultEnabled")
		if rapid.Bool().Draw(t, "deps") {
			m.Dependencies = rapid.SliceOfN(rapid.Custom(func(t *rapid.T) plugin.Dependency {
				return plugin.Dependency{Name: str.Draw(t, "name"), Marketplace: str.Draw(t, "marketplace"), Version: str.Draw(t, "version")}
			}), 0, 2).Draw(t, "dependencies")
		}
		m.Commands = strs.Draw(t, "commands")
		m.Agents = strs.Draw(t, "agents")
		m.Skills = strs.Draw(t, "skills")
		m.OutputStyles = strs.Draw(t, "outputStyles")
		for _, c := range []*plugin.ComponentSpec{&m.Hooks, &m.MCPServers, &m.LSPServers} {
			c.Paths = strs.Draw(t, "paths")
			c.Inline = raw.Draw(t, "inline")
		}
		m.UserConfig = raw.Draw(t, "userConfig")
		if rapid.Bool().Draw(t, "network") {
			m.Network = &plugin.Network{Hosts: strs.Draw(t, "hosts")}
		}
		m.Icon = str.Draw(t, "icon")
		m.PrivacyPolicyURL = str.Draw(t, "privacyPolicyUrl")
		if rapid.Bool().Draw(t, "commandObjects") {
			m.CommandObjects = rapid.MapOfN(str, rapid.Custom(func(t *rapid.T) plugin.CommandObject {
				return plugin.CommandObject{Source: str.Draw(t, "source"), Content: str.Draw(t, "content"), Description: str.Draw(t, "description")}
			}), 0, 3).Draw(t, "commandObjectMap")
		}
		if rapid.Bool().Draw(t, "extra") {
			m.Extra = rapid.MapOfN(str, raw, 0, 3).Draw(t, "extraMap")
		}
		e.Source = plugin.Source{
			Kind: plugin.SourceKind(rapid.SampledFrom([]string{"", "relative", "github", "url", "npm"}).Draw(t, "kind")),
			Path: str.Draw(t, "path"), Repo: str.Draw(t, "repo"), URL: str.Draw(t, "url"), Ref: str.Draw(t, "ref"), SHA: str.Draw(t, "sha"),
			Package: str.Draw(t, "package"), Version: str.Draw(t, "source.version"), Registry: str.Draw(t, "registry"), SHA256: str.Draw(t, "sha256"),
		}
		e.Category = str.Draw(t, "category")
		e.Tags = strs.Draw(t, "tags")
		e.Strict = flag.Draw(t, "strict")
		e.Integrity = str.Draw(t, "integrity")
		if rapid.Bool().Draw(t, "sigs") {
			e.Signatures = rapid.SliceOfN(rapid.Custom(func(t *rapid.T) plugin.Signature {
				return plugin.Signature{KeyID: str.Draw(t, "keyid"), Sig: str.Draw(t, "sig")}
			}), 0, 2).Draw(t, "signatures")
		}
		return e
	})
}

// deepCopy copies v so that the copy shares no pointer, slice or map with
// it (and its maps are built in another order).
func deepCopy(v reflect.Value) reflect.Value {
	out := reflect.New(v.Type()).Elem()
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			out.Set(deepCopy(v.Elem()).Addr())
		}
	case reflect.Slice:
		if !v.IsNil() {
			s := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			for i := range v.Len() {
				s.Index(i).Set(deepCopy(v.Index(i)))
			}
			out.Set(s)
		}
	case reflect.Map:
		if !v.IsNil() {
			m := reflect.MakeMap(v.Type())
			keys := v.MapKeys()
			for i := len(keys) - 1; i >= 0; i-- {
				m.SetMapIndex(keys[i], deepCopy(v.MapIndex(keys[i])))
			}
			out.Set(m)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			out.Field(i).Set(deepCopy(v.Field(i)))
		}
	default:
		out.Set(v)
	}
	return out
}

// The key is at least as fine as the JSON of the entry it replaced: two
// entries whose JSON differs have different keys, and equal entries (a
// copy sharing nothing with the original) have equal keys.
func TestIndexKeyFinerThanEntryJSON(t *testing.T) {
	gen := entries()
	jsonOf := func(t *rapid.T, e *plugin.Entry) string {
		if e == nil {
			return ""
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("marshal %+v: %v", e, err)
		}
		return string(b)
	}
	rapid.Check(t, func(t *rapid.T) {
		a := gen.Draw(t, "a")
		var b *plugin.Entry
		if rapid.Bool().Draw(t, "copy") {
			b = deepCopy(reflect.ValueOf(a)).Interface().(*plugin.Entry)
		} else {
			b = gen.Draw(t, "b")
		}
		ka, kb := entryKey(a), entryKey(b)
		if reflect.DeepEqual(a, b) && ka != kb {
			t.Fatalf("equal entries, different keys: %+v", a)
		}
		if ja, jb := jsonOf(t, a), jsonOf(t, b); ja != jb && ka == kb {
			t.Fatalf("JSON differs, key is the same:\n%s\n%s", ja, jb)
		}
	})
}
