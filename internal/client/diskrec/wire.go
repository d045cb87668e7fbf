// Package diskrec reads the compact binary records wharf keeps on disk (the
// installed registry's records, the agent's component index): unsigned and
// zigzag varints, single bytes and length-prefixed strings. Reads never go
// past the input and never allocate: strings are slices of the input.
package diskrec

import "encoding/binary"

// Reader reads from one string. The first malformed read records an error
// (made by the function given to NewReader) and makes every later read
// return zero values, so a decoder checks Err once, where it suits it.
type Reader struct {
	s    string
	off  int
	err  error
	errf func(what string, off int) error
}

// NewReader reads s from byte off on; errf describes a malformed read of
// what at offset off.
func NewReader(s string, off int, errf func(what string, off int) error) *Reader {
	return &Reader{s: s, off: min(max(off, 0), len(s)), errf: errf}
}

// Err is the first error, or nil.
func (r *Reader) Err() error { return r.err }

// Left is how many bytes are not read yet.
func (r *Reader) Left() int { return len(r.s) - r.off }

// Fail records a malformed read of what (unless an error is recorded
// already) and ends the input.
func (r *Reader) Fail(what string) {
	if r.err == nil {
		r.err = r.errf(what, r.off)
	}
	r.off = len(r.s)
}

// Uvarint reads an unsigned varint as encoding/binary writes it.
func (r *Reader) Uvarint() uint64 {
	var x uint64
	var shift uint
	for i := 0; r.off+i < len(r.s) && i < binary.MaxVarintLen64; i++ {
		c := r.s[r.off+i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break // more than 64 bits
			}
			r.off += i + 1
			return x | uint64(c)<<shift
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	r.Fail("varint")
	return 0
}

// Count reads a count or a length: an unsigned varint that can be no more
// than the bytes left, so a hostile count cannot make a caller allocate more
// than the input's size.
func (r *Reader) Count() int {
	n := r.Uvarint()
	if r.err == nil && n > uint64(r.Left()) {
		r.Fail("count beyond the end")
		return 0
	}
	return int(n)
}

// Varint reads a signed (zigzag) varint as encoding/binary writes it.
func (r *Reader) Varint() int64 {
	ux := r.Uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.off >= len(r.s) {
		r.Fail("byte")
		return 0
	}
	c := r.s[r.off]
	r.off++
	return c
}

// Str reads a length-prefixed string, a slice of the input.
func (r *Reader) Str() string {
	n := r.Count()
	if r.err != nil {
		return ""
	}
	v := r.s[r.off : r.off+n]
	r.off += n
	return v
}
