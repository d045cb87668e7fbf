package gitserver

import (
	"net/http"
	"strings"
	"testing"
)

// Seeds are request bodies real git sent (git 2.39), with the object ids
// of the repository the fuzz target serves substituted in.
func fuzzSeeds(tip string) []struct {
	v2   bool
	body string
} {
	caps := " multi_ack_detailed no-done side-band-64k thin-pack no-progress include-tag ofs-delta agent=git/2.39.5\n"
	return []struct {
		v2   bool
		body string
	}{
		{false, pktLines("want "+tip+caps, "deepen 1\n", "0000")},
		{false, pktLines("want "+tip+caps, "deepen 1\n", "0000", "done\n")},
		{false, pktLines("want "+tip+caps, "shallow "+tip+"\n", "deepen 2147483647\n", "0000", "have "+tip+"\n", "done\n")},
		{false, pktLines("want "+tip+caps, "0000", "have "+tip+"\n", "0000")},
		{false, pktLines("want "+tip+" side-band\n", "0000", "have "+tip+"\n", "done\n")},
		{true, pktLines("command=ls-refs\n", "agent=git/2.39.5", "object-format=sha1", "0001", "peel\n", "symrefs\n", "unborn\n", "ref-prefix HEAD\n", "ref-prefix refs/heads/\n", "0000")},
		{true, pktLines("command=fetch", "agent=git/2.39.5", "object-format=sha1", "0001", "thin-pack", "no-progress", "include-tag", "ofs-delta", "deepen 1", "want "+tip+"\n", "done\n", "0000")},
		{true, pktLines("command=fetch", "0001", "ofs-delta", "shallow "+tip, "want "+tip+"\n", "have "+tip+"\n", "0000")},
		{true, "0000"},
		{false, "0001"},
	}
}

// FuzzParseRequest feeds arbitrary bodies to the request parsers: they
// return a request or an error, never panic, and what they accept is
// within the limits.
func FuzzParseRequest(f *testing.F) {
	for _, s := range fuzzSeeds(strings.Repeat("ab", 20)) {
		f.Add(s.body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if req, err := parseV0Request([]byte(body)); err == nil {
			if len(req.wants) == 0 || len(req.wants) > maxWants || req.depth < 0 || req.depth > maxDepth {
				t.Fatalf("v0 accepted an out-of-limit request: %d wants, depth %d", len(req.wants), req.depth)
			}
		}
		v2, err := parseV2Request([]byte(body))
		if err != nil {
			return
		}
		if _, err := parseLsRefs(v2.args); err != nil {
			_ = err.Error()
		}
		if req, err := parseV2Fetch(v2.args); err == nil && len(req.wants) == 0 {
			t.Fatalf("v2 fetch accepted without wants")
		}
	})
}

// FuzzServeUploadPack sends arbitrary bodies through the whole server over
// a small repository: every answer is 200 (a pkt-line stream, possibly an
// ERR line) or a 4xx, never a panic or a 5xx.
func FuzzServeUploadPack(f *testing.F) {
	srv, tip := memServer(f, &Server{MaxRequestBytes: 64 << 10})
	for _, s := range fuzzSeeds(tip.String()) {
		f.Add(s.v2, s.body)
	}
	f.Fuzz(func(t *testing.T, v2 bool, body string) {
		w := post(t, srv, v2, strings.NewReader(body), nil)
		if w.Code != http.StatusOK && (w.Code < 400 || w.Code >= 500) {
			t.Fatalf("status %d for %q", w.Code, body)
		}
	})
}
