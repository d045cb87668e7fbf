package api

import (
	"bytes"
	"errors"
	"net/http"
	"testing"
)

// FuzzDecodeJSON: the strict decoder never panics, and every failure is a
// 400 with a code, never a 500.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"role": "ci"}`, `{"role": 1}`, `{"role": "ci", "x": 1}`, "{\n\"role\":\n", ``, ` `, `[]`, `{"role": "ci"} x`,
		`{"plugins": ["a@b", "c"]}`, `{"plugins": [{"name": "x"}]}`, "\xff\xfe", `{"settings": {"a": 1e999}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, v := range []any{&createTokenRequest{}, &resolveRequest{}, &layerBody{}, &verifyRequest{}} {
			err := decodeJSON(body, v)
			if err == nil {
				continue
			}
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Code == "" || ae.Message == "" {
				t.Fatalf("decode %q: %#v", body, err)
			}
		}
		var lb layerBody
		if decodeJSON(body, &lb) == nil {
			// Validation of a decoded layer never panics either.
			_ = validateLayerBody(&lb)
		}
	})
}

// FuzzParsePrecondition: any If-Match / If-None-Match is either accepted or
// refused with a 4xx, and an accepted one behaves consistently.
func FuzzParsePrecondition(f *testing.F) {
	for _, s := range [][2]string{{`"3"`, ""}, {"", "*"}, {`"0"`, ""}, {"*", ""}, {`W/"2"`, ""}, {"abc", ""}, {"", `"1"`}, {`"1"`, "*"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, im, inm string) {
		h := http.Header{}
		if im != "" {
			h.Set("If-Match", im)
		}
		if inm != "" {
			h.Set("If-None-Match", inm)
		}
		p, err := parsePrecondition(h)
		if err != nil {
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status < 400 || ae.Status >= 500 {
				t.Fatalf("%q %q: %#v", im, inm, err)
			}
			return
		}
		if p.mustNotExist && p.check(0) != nil {
			t.Fatalf("create precondition refuses an absent layer")
		}
		if p.mustNotExist && p.check(1) == nil {
			t.Fatalf("create precondition accepts an existing layer")
		}
	})
}

// FuzzReadBundle: a hostile bundle is refused with an error, never a panic,
// and never accepted without a valid signature.
func FuzzReadBundle(f *testing.F) {
	f.Add([]byte{0x1f, 0x8b, 0x08, 0x00})
	f.Add([]byte("not a bundle"))
	key := BundleKey{KeyID: "k", Algorithm: BundleAlgorithm, PublicKey: "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n"}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := ReadBundle(bytes.NewReader(b), key); err == nil {
			t.Fatalf("accepted a bundle without a signature by the key")
		}
	})
}
