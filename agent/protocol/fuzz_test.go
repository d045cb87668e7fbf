package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wharfhq/wharf/agent/internal/worldtest"
)

// FuzzServeLines feeds arbitrary input to the line reader and dispatcher:
// the server never panics, writes only control_response lines, answers at
// most once per input line, and echoes only ids that were sent.
func FuzzServeLines(f *testing.F) {
	for _, s := range []string{
		req("a", "initialize", "") + "\n",
		req("a", "status", "") + "\n" + req("a", "status", "") + "\n",
		"garbage\n\n[1]\n",
		`{"type":"control_request","request_id":7}` + "\n",
		`{"type":"control_cancel_request","request_id":"a"}` + "\n",
		req("x", "list_components", `"kind":"command"`),
		req("h", "run_hook", `"event":"Stop","input":{}`) + "\n",
		req("p", "policy_check", `"action":"load","plugin":"a@b"`) + "\n",
		strings.Repeat("x", 3000) + "\n" + req("after", "initialize", "") + "\n",
		"{\"type\":\"control_request\",\"request_id\":\"\xff\",\"request\":{\"subtype\":\"status\"}}\n",
	} {
		f.Add([]byte(s))
	}
	w := worldtest.New(f)
	rt := w.Runtime(w.Options())
	srv := &Server{Backend: &Runtime{Runtime: rt}, MaxLine: 1024, Log: io.Discard}
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		if err := srv.Serve(context.Background(), bytes.NewReader(in), &out); err != nil {
			t.Fatal(err)
		}
		lines := bytes.Count(in, []byte("\n")) + 1
		got := 0
		for _, line := range bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			got++
			var r response
			if err := json.Unmarshal(line, &r); err != nil || r.Type != TypeControlResponse {
				t.Fatalf("output line %q: %v", line, err)
			}
			if r.Response.Subtype != SubtypeSuccess && r.Response.Subtype != SubtypeError {
				t.Fatalf("subtype %q", r.Response.Subtype)
			}
			// An id with JSON escapes decodes to text not in the input
			// verbatim; the check covers the rest.
			if id := r.Response.RequestID; id != nil && !bytes.ContainsRune(in, '\\') && utf8.Valid(in) {
				if !bytes.Contains(in, []byte(*id)) {
					t.Fatalf("response to id %q, which was never sent", *id)
				}
			}
		}
		if got > lines {
			t.Fatalf("%d responses to %d lines", got, lines)
		}
	})
}
