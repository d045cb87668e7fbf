package agent

import (
	"encoding/binary"
	"encoding/json"
	"maps"
	"slices"

	"github.com/wharfhq/wharf/plugin"
)

// appendEntry appends to an index key every field of a plugin's marketplace
// entry, so that two entries that differ in any field give different keys.
// It replaces json.Marshal of the entry, which cost half of indexKey and
// allocated per plugin at every start, and it covers what the JSON form
// leaves out (CommandObjects, Extra): a marketplace entry's commands in the
// object form are components too.
//
// Every value is self-delimiting (a length or count before it, a tag before
// anything that may be absent), so the bytes decode back to one entry and
// distinct entries cannot give the same bytes. A nil slice, map or raw
// message is told from an empty one (keyLen writes 0 for nil, n+1 for n):
// finer than the JSON form needs, which only costs a rebuild.
// TestIndexKeyCoversEveryEntryField fails when plugin.Entry, or a type in
// it, gains a field this does not write.
func appendEntry(b []byte, e *plugin.Entry) []byte {
	if e == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	m := &e.Manifest
	b = keyStrs(b, m.Name, m.DisplayName, m.Version, m.Description)
	if a := m.Author; a != nil {
		b = keyStrs(append(b, 1), a.Name, a.Email, a.URL)
	} else {
		b = append(b, 0)
	}
	b = keyStrs(b, m.Homepage, m.Repository, m.License)
	b = keyList(b, m.Keywords)
	b = keyBool(b, m.DefaultEnabled)
	b = keyLen(b, m.Dependencies == nil, len(m.Dependencies))
	for _, d := range m.Dependencies {
		b = keyStrs(b, d.Name, d.Marketplace, d.Version)
	}
	b = keyList(b, m.Commands)
	b = keyList(b, m.Agents)
	b = keyList(b, m.Skills)
	b = keyList(b, m.OutputStyles)
	for _, c := range []*plugin.ComponentSpec{&m.Hooks, &m.MCPServers, &m.LSPServers} {
		b = keyRaw(keyList(b, c.Paths), c.Inline)
	}
	b = keyRaw(b, m.UserConfig)
	if n := m.Network; n != nil {
		b = keyList(append(b, 1), n.Hosts)
	} else {
		b = append(b, 0)
	}
	b = keyStrs(b, m.Icon, m.PrivacyPolicyURL)
	b = keyLen(b, m.CommandObjects == nil, len(m.CommandObjects))
	if len(m.CommandObjects) > 0 {
		for _, k := range slices.Sorted(maps.Keys(m.CommandObjects)) {
			c := m.CommandObjects[k]
			b = keyStrs(b, k, c.Source, c.Content, c.Description)
		}
	}
	b = keyLen(b, m.Extra == nil, len(m.Extra))
	if len(m.Extra) > 0 {
		for _, k := range slices.Sorted(maps.Keys(m.Extra)) {
			b = keyRaw(keyStrs(b, k), m.Extra[k])
		}
	}

	s := &e.Source
	b = keyStrs(b, string(s.Kind), s.Path, s.Repo, s.URL, s.Ref, s.SHA, s.Package, s.Version, s.Registry, s.SHA256)
	b = keyStrs(b, e.Category)
	b = keyList(b, e.Tags)
	b = keyBool(b, e.Strict)
	b = keyStrs(b, e.Integrity)
	b = keyLen(b, e.Signatures == nil, len(e.Signatures))
	for _, sig := range e.Signatures {
		b = keyStrs(b, sig.KeyID, sig.Sig)
	}
	return b
}

// keyStrs appends each string with its length.
func keyStrs(b []byte, ss ...string) []byte {
	for _, s := range ss {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// keyLen appends the length of a slice or map: 0 when it is nil, n+1 for n.
func keyLen(b []byte, isNil bool, n int) []byte {
	if isNil {
		return append(b, 0)
	}
	return binary.AppendUvarint(b, uint64(n)+1)
}

func keyList(b []byte, l []string) []byte {
	return keyStrs(keyLen(b, l == nil, len(l)), l...)
}

func keyRaw(b []byte, r json.RawMessage) []byte {
	return append(keyLen(b, r == nil, len(r)), r...)
}

// keyBool appends an optional flag: 0 absent, 1 false, 2 true.
func keyBool(b []byte, v *bool) []byte {
	switch {
	case v == nil:
		return append(b, 0)
	case !*v:
		return append(b, 1)
	default:
		return append(b, 2)
	}
}
