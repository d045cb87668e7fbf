package gitserver

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Limits on what one request may ask for; a request over them gets a
// protocol error rather than unbounded work.
const (
	maxWants = 4096
	maxHaves = 65536
	// maxDepth is the largest "deepen" git sends (INFINITE_DEPTH, used by
	// git fetch --unshallow).
	maxDepth = 1<<31 - 1
)

// requestError is a well-framed request that asks for something the
// server does not understand or will not do. Its text goes back to the
// client in an ERR pkt-line, so it names the offending line.
type requestError struct {
	line string
	msg  string
}

func (e *requestError) Error() string {
	if e.line == "" {
		return e.msg
	}
	return fmt.Sprintf("%s (in request line %q)", e.msg, e.line)
}

func badLine(line []byte, format string, a ...any) error {
	l := string(line)
	if len(l) > 80 {
		l = l[:80] + "..."
	}
	return &requestError{line: l, msg: fmt.Sprintf(format, a...)}
}

// fetchRequest is an upload-pack request in either protocol version.
type fetchRequest struct {
	wants    []plumbing.Hash
	haves    []plumbing.Hash
	shallows []plumbing.Hash
	depth    int  // 0: no deepen
	relative bool // deepen counts from the client's shallow boundary
	since    int64
	not      []string // refs whose history deepen-not cuts off
	done     bool     // the client will send no more haves
	// negotiate is false for a v0 request that ends after the wants (git's
	// first request of a shallow fetch): the answer is only the shallow
	// update.
	negotiate bool

	multiAck, multiAckDetailed bool
	sideBand, sideBand64k      bool
	ofsDelta                   bool
	noProgress                 bool
	includeTag                 bool
}

func parseHash(line, s []byte) (plumbing.Hash, error) {
	if len(s) != 40 {
		return plumbing.ZeroHash, badLine(line, "object id %q is not 40 hex digits", truncate(s))
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return plumbing.ZeroHash, badLine(line, "object id %q is not 40 lowercase hex digits", truncate(s))
		}
	}
	return plumbing.NewHash(string(s)), nil
}

func truncate(b []byte) string {
	if len(b) > 48 {
		return string(b[:48]) + "..."
	}
	return string(b)
}

func parseDepth(line, s []byte) (int, error) {
	n, err := strconv.ParseInt(string(s), 10, 64)
	if err != nil || n <= 0 {
		return 0, badLine(line, "deepen needs a positive number of commits")
	}
	if n > maxDepth {
		return 0, badLine(line, "deepen %d is deeper than the largest depth, %d", n, maxDepth)
	}
	return int(n), nil
}

// deepenArg handles the deepen-since and deepen-not lines of both
// protocol versions; ok is false for any other line.
func (r *fetchRequest) deepenArg(line []byte) (ok bool, err error) {
	switch {
	case bytes.HasPrefix(line, []byte("deepen-since ")):
		n, perr := strconv.ParseInt(string(line[len("deepen-since "):]), 10, 64)
		if perr != nil || n <= 0 {
			return true, badLine(line, "deepen-since needs a positive unix time")
		}
		r.since = n
		return true, nil
	case bytes.HasPrefix(line, []byte("deepen-not ")):
		ref := string(line[len("deepen-not "):])
		if ref == "" || len(r.not) >= maxWants {
			return true, badLine(line, "deepen-not needs a ref, at most %d of them", maxWants)
		}
		r.not = append(r.not, ref)
		return true, nil
	}
	return false, nil
}

// deepens reports whether the request cuts history (a shallow fetch).
func (r *fetchRequest) deepens() bool {
	return r.depth > 0 || r.since > 0 || len(r.not) > 0
}

// checkDeepen refuses combinations git itself refuses.
func (r *fetchRequest) checkDeepen() error {
	if r.depth > 0 && (r.since > 0 || len(r.not) > 0) {
		return &requestError{msg: "deepen cannot be combined with deepen-since or deepen-not"}
	}
	return nil
}

// parseV0Request decodes a stateless (HTTP) protocol v0/v1 upload-pack
// request: want lines (the first carrying capabilities), shallow and
// deepen lines, a flush, then have lines ended by a flush or "done".
func parseV0Request(body []byte) (*fetchRequest, error) {
	pkts, err := splitPkts(body)
	if err != nil {
		return nil, err
	}
	req := &fetchRequest{}
	i := 0
	for ; i < len(pkts); i++ {
		p := pkts[i]
		if p.kind == pktFlush {
			break
		}
		if p.kind != pktData {
			return nil, &requestError{msg: "unexpected delimiter in a protocol v0 request"}
		}
		line := p.data
		switch {
		case bytes.HasPrefix(line, []byte("want ")):
			rest := line[5:]
			id := rest
			if sp := bytes.IndexByte(rest, ' '); sp >= 0 {
				id = rest[:sp]
				if len(req.wants) > 0 {
					return nil, badLine(line, "capabilities are allowed only on the first want line")
				}
				req.setCaps(strings.Fields(string(rest[sp+1:])))
			}
			h, err := parseHash(line, id)
			if err != nil {
				return nil, err
			}
			if len(req.wants) >= maxWants {
				return nil, badLine(line, "more than %d wants", maxWants)
			}
			req.wants = append(req.wants, h)
		case bytes.HasPrefix(line, []byte("shallow ")):
			h, err := parseHash(line, line[8:])
			if err != nil {
				return nil, err
			}
			if len(req.shallows) >= maxHaves {
				return nil, badLine(line, "more than %d shallow lines", maxHaves)
			}
			req.shallows = append(req.shallows, h)
		case bytes.HasPrefix(line, []byte("deepen ")):
			d, err := parseDepth(line, line[7:])
			if err != nil {
				return nil, err
			}
			req.depth = d
		default:
			if ok, err := req.deepenArg(line); ok {
				if err != nil {
					return nil, err
				}
				continue
			}
			return nil, badLine(line, "unknown upload-pack request line; expected want, shallow or deepen")
		}
	}
	if i == len(pkts) {
		return nil, &requestError{msg: "request ended before the flush after its wants"}
	}
	if len(req.wants) == 0 {
		return nil, &requestError{msg: "request has no want lines"}
	}
	if err := req.checkDeepen(); err != nil {
		return nil, err
	}
	i++ // the flush
	if i == len(pkts) {
		return req, nil
	}
	req.negotiate = true
	for ; i < len(pkts); i++ {
		p := pkts[i]
		if p.kind == pktFlush {
			if i != len(pkts)-1 {
				return nil, &requestError{msg: "data after the flush that ends the haves"}
			}
			return req, nil
		}
		if p.kind != pktData {
			return nil, &requestError{msg: "unexpected delimiter in a protocol v0 request"}
		}
		line := p.data
		switch {
		case bytes.HasPrefix(line, []byte("have ")):
			h, err := parseHash(line, line[5:])
			if err != nil {
				return nil, err
			}
			if len(req.haves) >= maxHaves {
				return nil, badLine(line, "more than %d haves", maxHaves)
			}
			req.haves = append(req.haves, h)
		case bytes.Equal(line, []byte("done")):
			if i != len(pkts)-1 {
				return nil, &requestError{msg: "data after done"}
			}
			req.done = true
			return req, nil
		default:
			return nil, badLine(line, "unknown line in the haves; expected have or done")
		}
	}
	return nil, &requestError{msg: "request ended without a flush or done after its haves"}
}

func (r *fetchRequest) setCaps(caps []string) {
	for _, c := range caps {
		switch c {
		case "multi_ack":
			r.multiAck = true
		case "multi_ack_detailed":
			r.multiAckDetailed = true
		case "side-band":
			r.sideBand = true
		case "side-band-64k":
			r.sideBand64k = true
		case "ofs-delta":
			r.ofsDelta = true
		case "no-progress":
			r.noProgress = true
		case "include-tag":
			r.includeTag = true
		case "deepen-relative":
			r.relative = true
		}
	}
}

// v2Request is one protocol v2 command request: "command=NAME",
// capability lines, a delimiter, argument lines, a flush.
type v2Request struct {
	command string
	caps    []string
	args    [][]byte
}

func parseV2Request(body []byte) (*v2Request, error) {
	pkts, err := splitPkts(body)
	if err != nil {
		return nil, err
	}
	if len(pkts) == 0 || pkts[0].kind != pktData || !bytes.HasPrefix(pkts[0].data, []byte("command=")) {
		return nil, &requestError{msg: "protocol v2 request does not start with command=NAME"}
	}
	req := &v2Request{command: string(pkts[0].data[len("command="):])}
	i := 1
	for ; i < len(pkts) && pkts[i].kind == pktData; i++ {
		req.caps = append(req.caps, string(pkts[i].data))
	}
	if i == len(pkts) {
		return nil, &requestError{msg: "protocol v2 request ended without a flush"}
	}
	if pkts[i].kind == pktDelim {
		for i++; i < len(pkts) && pkts[i].kind == pktData; i++ {
			req.args = append(req.args, pkts[i].data)
		}
	}
	if i != len(pkts)-1 || pkts[i].kind != pktFlush {
		return nil, &requestError{msg: "protocol v2 request must end with one flush"}
	}
	for _, c := range req.caps {
		if strings.HasPrefix(c, "object-format=") && c != "object-format=sha1" {
			return nil, &requestError{msg: fmt.Sprintf("unsupported %s; this server speaks sha1", c)}
		}
	}
	return req, nil
}

// lsRefsArgs are the arguments of the v2 ls-refs command.
type lsRefsArgs struct {
	symrefs, peel bool
	prefixes      []string
}

func parseLsRefs(args [][]byte) (*lsRefsArgs, error) {
	a := &lsRefsArgs{}
	for _, line := range args {
		switch {
		case bytes.Equal(line, []byte("symrefs")):
			a.symrefs = true
		case bytes.Equal(line, []byte("peel")):
			a.peel = true
		case bytes.Equal(line, []byte("unborn")):
			// Not advertised; an unborn HEAD is simply left out.
		case bytes.HasPrefix(line, []byte("ref-prefix ")):
			if len(a.prefixes) >= maxWants {
				return nil, badLine(line, "more than %d ref-prefix lines", maxWants)
			}
			a.prefixes = append(a.prefixes, string(line[len("ref-prefix "):]))
		default:
			return nil, badLine(line, "unknown ls-refs argument")
		}
	}
	return a, nil
}

// parseV2Fetch decodes the arguments of the v2 fetch command.
func parseV2Fetch(args [][]byte) (*fetchRequest, error) {
	req := &fetchRequest{negotiate: true, sideBand64k: true}
	for _, line := range args {
		switch {
		case bytes.HasPrefix(line, []byte("want ")):
			h, err := parseHash(line, line[5:])
			if err != nil {
				return nil, err
			}
			if len(req.wants) >= maxWants {
				return nil, badLine(line, "more than %d wants", maxWants)
			}
			req.wants = append(req.wants, h)
		case bytes.HasPrefix(line, []byte("have ")):
			h, err := parseHash(line, line[5:])
			if err != nil {
				return nil, err
			}
			if len(req.haves) >= maxHaves {
				return nil, badLine(line, "more than %d haves", maxHaves)
			}
			req.haves = append(req.haves, h)
		case bytes.HasPrefix(line, []byte("shallow ")):
			h, err := parseHash(line, line[8:])
			if err != nil {
				return nil, err
			}
			if len(req.shallows) >= maxHaves {
				return nil, badLine(line, "more than %d shallow lines", maxHaves)
			}
			req.shallows = append(req.shallows, h)
		case bytes.HasPrefix(line, []byte("deepen ")):
			d, err := parseDepth(line, line[7:])
			if err != nil {
				return nil, err
			}
			req.depth = d
		case bytes.Equal(line, []byte("done")):
			req.done = true
		case bytes.Equal(line, []byte("deepen-relative")):
			req.relative = true
		case bytes.Equal(line, []byte("thin-pack")):
			// Allowed, never needed: packs sent here are self-contained.
		case bytes.Equal(line, []byte("no-progress")):
			req.noProgress = true
		case bytes.Equal(line, []byte("include-tag")):
			req.includeTag = true
		case bytes.Equal(line, []byte("ofs-delta")):
			req.ofsDelta = true
		default:
			if ok, err := req.deepenArg(line); ok {
				if err != nil {
					return nil, err
				}
				continue
			}
			return nil, badLine(line, "unknown or unsupported fetch argument (this server supports want, have, done, shallow, deepen, deepen-relative, deepen-since, deepen-not, thin-pack, no-progress, include-tag, ofs-delta)")
		}
	}
	if len(req.wants) == 0 {
		return nil, &requestError{msg: "fetch request has no want lines"}
	}
	if err := req.checkDeepen(); err != nil {
		return nil, err
	}
	return req, nil
}
