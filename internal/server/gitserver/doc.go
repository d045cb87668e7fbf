// Package gitserver serves git repositories over git's smart HTTP protocol,
// read-only, without a git binary: what `git clone`, `git clone --depth 1`
// and `git fetch` need from a server.
//
// A Server answers two requests under the repository name, relative to
// where it is mounted (callers use http.StripPrefix):
//
//	GET  <repo>/info/refs?service=git-upload-pack   ref advertisement
//	POST <repo>/git-upload-pack                      negotiation and pack
//
// Both protocol versions are spoken. With `Git-Protocol: version=2` (what
// current git asks for) the advertisement lists the capabilities and the
// POST carries one command: ls-refs (ref-prefix, symrefs, peel) or fetch
// (want, have, done, shallow, deepen N, deepen-relative, deepen-since,
// deepen-not, include-tag, ofs-delta, no-progress; the answer has acknowledgments, shallow-info and a packfile
// section muxed on side-band-64k). Otherwise the v0 advertisement lists
// HEAD (with its symref) and every ref with its peeled tag, and the POST
// is one stateless round of upload-pack: want lines with capabilities
// (multi_ack_detailed, side-band-64k, ofs-delta, shallow, deepen-since,
// deepen-not, deepen-relative, no-progress, include-tag), shallow and
// deepen lines, then haves answered with ACK/NAK
// until "done", then the pack.
//
// A fetch with haves sends only what the client lacks: the commits between
// its wants and what the client has, and the trees and blobs not already
// in the trees of the commits it has. A `deepen N` fetch cuts history N
// commits below each want and tells the client its new shallow boundary;
// `git fetch --unshallow` (deepen 2147483647) sends what lies beyond it;
// --shallow-since, --shallow-exclude and fetch --deepen cut by time, by
// ref and from the client's boundary. Packs are cached by what determines
// them (wants, what the client has, the cut), so a team cloning the same
// commit costs one pack build; a pack of a single commit is sent without
// delta search.
// Wants must be reachable from the repository's refs.
//
// Push is refused (403). Every request is bounded: the body by
// MaxRequestBytes (after gzip, which git uses for larger requests), and the
// request's reading and computing by Timeout, which also bounds each stall
// while the pack is sent. A malformed or unsupported request gets an ERR
// pkt-line naming the offending line, which git prints as "remote error";
// HTTP-level faults (unknown repository, wrong method or content type, body
// too large or too slow) get 4xx with a plain-text reason.
//
// githttp imports nothing of wharf's; callers supply the repositories
// through Open as go-git storers.
package gitserver
