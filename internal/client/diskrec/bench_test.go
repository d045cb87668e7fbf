package diskrec

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// record is a stream like the agent's component index: mostly strings of
// fewer than 128 bytes (paths, names, descriptions), so mostly one-byte
// lengths, with now and then a count or a longer string.
func record() string {
	var b []byte
	for i := range 2000 {
		for _, s := range []string{"/home/u/.wharf/cache/corp/ops/1.0.0", "ops:cmd", "cmd", fmt.Sprintf("Command %d of ops", i)} {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
		b = binary.AppendUvarint(b, uint64(i))
		b = binary.AppendVarint(b, -int64(i%3))
	}
	return string(b)
}

func BenchmarkReader(b *testing.B) {
	s := record()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		r := NewReader(s, 0, func(what string, off int) error { return fmt.Errorf("%s at %d", what, off) })
		for r.Left() > 0 {
			r.Str()
			r.Str()
			r.Str()
			r.Str()
			r.Uvarint()
			r.Varint()
		}
		if r.Err() != nil {
			b.Fatal(r.Err())
		}
	}
}
