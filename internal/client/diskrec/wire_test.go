package diskrec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"
)

var errBad = errors.New("bad record")

func reader(b []byte) *Reader {
	return NewReader(string(b), 0, func(what string, off int) error { return fmt.Errorf("%w: %s at %d", errBad, what, off) })
}

func TestRoundTrip(t *testing.T) {
	var b []byte
	b = binary.AppendUvarint(b, math.MaxUint64)
	b = binary.AppendVarint(b, -123456789)
	b = binary.AppendVarint(b, math.MinInt64)
	b = append(b, 7)
	b = binary.AppendUvarint(b, 5)
	b = append(b, "hello"...)
	b = binary.AppendUvarint(b, 0)
	r := reader(b)
	if got := r.Uvarint(); got != math.MaxUint64 {
		t.Errorf("uvarint = %d", got)
	}
	if got := r.Varint(); got != -123456789 {
		t.Errorf("varint = %d", got)
	}
	if got := r.Varint(); got != math.MinInt64 {
		t.Errorf("varint = %d", got)
	}
	if got := r.Byte(); got != 7 {
		t.Errorf("byte = %d", got)
	}
	if got := r.Str(); got != "hello" {
		t.Errorf("str = %q", got)
	}
	if got := r.Str(); got != "" {
		t.Errorf("empty str = %q", got)
	}
	if r.Err() != nil || r.Left() != 0 {
		t.Fatalf("err %v, %d left", r.Err(), r.Left())
	}
}

func TestMalformed(t *testing.T) {
	cases := map[string]struct {
		in   []byte
		read func(*Reader)
		want string
	}{
		"truncated varint":    {[]byte{0x80, 0x80}, func(r *Reader) { r.Uvarint() }, "varint at 0"},
		"varint over 64 bits": {[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, func(r *Reader) { r.Uvarint() }, "varint at 0"},
		"string past the end": {[]byte{5, 'a', 'b'}, func(r *Reader) { r.Str() }, "count beyond the end at 1"},
		"count past the end":  {[]byte{0xff, 0x01}, func(r *Reader) { r.Count() }, "count beyond the end at 2"},
		"byte at the end":     {nil, func(r *Reader) { r.Byte() }, "byte at 0"},
		"first error is kept": {[]byte{9}, func(r *Reader) { r.Str(); r.Byte() }, "count beyond the end at 1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := reader(tc.in)
			tc.read(r)
			if err := r.Err(); !errors.Is(err, errBad) || err.Error() != "bad record: "+tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if r.Left() != 0 || r.Str() != "" || r.Uvarint() != 0 {
				t.Fatal("reads after an error must return zero values")
			}
		})
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte{3, 'a', 'b', 'c', 0x80, 1, 9})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := reader(data)
		for i := 0; r.Err() == nil && r.Left() > 0 && i < 1000; i++ {
			switch data[len(data)-r.Left()] % 4 {
			case 0:
				r.Str()
			case 1:
				r.Varint()
			case 2:
				r.Byte()
			default:
				if n := r.Count(); n > len(data) {
					t.Fatalf("count %d exceeds the input", n)
				}
			}
		}
	})
}

// Uvarint reads what binary.Uvarint reads, and fails where it fails (n ==
// 0: the input ends inside the varint; n < 0: more than 64 bits), without
// moving on past a malformed varint.
func TestUvarintEqualsBinary(t *testing.T) {
	var cases [][]byte
	for _, v := range []uint64{0, 1, 127, 128, 255, 16383, 16384, 1<<32 - 1, 1 << 63, math.MaxUint64} {
		cases = append(cases, binary.AppendUvarint(nil, v))
	}
	cases = append(cases,
		nil,                              // empty
		[]byte{0x80}, []byte{0xff, 0xff}, // truncated
		[]byte{0x80, 0x00}, // overlong zero: binary.Uvarint accepts it
		[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},       // max
		[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02},       // 65 bits
		[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, // eleven bytes
		[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},             // nine bytes, truncated
	)
	for _, in := range cases {
		want, n := binary.Uvarint(in)
		// A byte after the varint must stay unread.
		r := reader(append(in[:len(in):len(in)], 0x05))
		got := r.Uvarint()
		switch {
		case n > 0:
			if got != want || r.Err() != nil || r.Left() != 1 {
				t.Errorf("% x: %d, err %v, %d left; binary.Uvarint %d", in, got, r.Err(), r.Left(), want)
			}
		case n < 0 && (got != 0 || !errors.Is(r.Err(), errBad)):
			t.Errorf("% x: %d, err %v; binary.Uvarint overflows", in, got, r.Err())
		default:
			// With the trailing byte a truncated varint is complete:
			// read the input alone.
			alone := reader(in)
			if got := alone.Uvarint(); got != 0 || !errors.Is(alone.Err(), errBad) {
				t.Errorf("% x: %d, err %v; binary.Uvarint n = %d", in, got, alone.Err(), n)
			}
		}
	}
}
