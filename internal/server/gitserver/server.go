package gitserver

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
)

// ErrNotFound is wrapped by Open's error when the named repository does not
// exist; the client then gets 404 and git says "repository not found".
var ErrNotFound = errors.New("repository not found")

const (
	// DefaultMaxRequestBytes bounds a request body (after gzip) when
	// Server.MaxRequestBytes is 0. A fetch of a few thousand refs with a
	// long negotiation fits many times over.
	DefaultMaxRequestBytes = 1 << 20
	// DefaultTimeout bounds reading a request and computing its answer,
	// and any stall while sending it, when Server.Timeout is 0.
	DefaultTimeout = 60 * time.Second

	agent = "agent=wharf-githttp"
)

// Server serves the repositories Open returns over git's smart HTTP
// protocol, read-only. Mount it with http.StripPrefix so that request
// paths start with the repository name.
type Server struct {
	// Open returns the repository named by the first path element
	// (".git" suffix optional, and removed before the call); an error
	// wrapping ErrNotFound gives 404. It is called once per request, and
	// the storer is only read; a storer shared between requests must be
	// safe for concurrent reads (go-git's memory storage is, once built).
	Open func(ctx context.Context, repo string) (storage.Storer, error)
	// MaxRequestBytes bounds a request body; 0 means DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// Timeout bounds reading a request and computing the answer, and each
	// stall while the answer is sent; 0 means DefaultTimeout.
	Timeout time.Duration

	cacheOnce sync.Once
	cache     *packCache
}

func (s *Server) maxBytes() int64 {
	if s.MaxRequestBytes > 0 {
		return s.MaxRequestBytes
	}
	return DefaultMaxRequestBytes
}

func (s *Server) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return DefaultTimeout
}

// ServeHTTP answers GET <repo>/info/refs?service=git-upload-pack and
// POST <repo>/git-upload-pack; push is refused with 403.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	repo, rest, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	repo = strings.TrimSuffix(repo, ".git")
	if !ok || !validRepoName(repo) {
		httpError(w, http.StatusNotFound, "not a git repository path: %q (expected <repo>/info/refs or <repo>/git-upload-pack)", r.URL.Path)
		return
	}
	var service string
	switch rest {
	case "info/refs":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET")
			httpError(w, http.StatusMethodNotAllowed, "%s %s: only GET is allowed", r.Method, r.URL.Path)
			return
		}
		service = r.URL.Query().Get("service")
		if service == "" {
			httpError(w, http.StatusForbidden, "only git's smart HTTP protocol is served; use git 1.6.6 or later")
			return
		}
	case "git-upload-pack", "git-receive-pack":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			httpError(w, http.StatusMethodNotAllowed, "%s %s: only POST is allowed", r.Method, r.URL.Path)
			return
		}
		service = rest
	default:
		httpError(w, http.StatusNotFound, "no such git endpoint: %q", r.URL.Path)
		return
	}
	switch service {
	case "git-upload-pack":
	case "git-receive-pack":
		httpError(w, http.StatusForbidden, "repository %q is read-only: push (git-receive-pack) is not served", repo)
		return
	default:
		httpError(w, http.StatusForbidden, "unknown git service %q; only git-upload-pack is served", service)
		return
	}

	ctx, cancel := context.WithTimeout(r.Context(), s.timeout())
	defer cancel()
	rc := http.NewResponseController(w)
	deadline := time.Now().Add(s.timeout())
	_ = rc.SetReadDeadline(deadline) // not every ResponseWriter supports it
	_ = rc.SetWriteDeadline(deadline)

	if s.Open == nil {
		httpError(w, http.StatusInternalServerError, "git server has no Open function: no repositories to serve")
		return
	}
	st, err := s.Open(ctx, repo)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			httpError(w, http.StatusNotFound, "repository %q not found", repo)
			return
		}
		httpError(w, http.StatusInternalServerError, "opening repository %q: %v", repo, err)
		return
	}
	v2 := protocolV2(r.Header)
	s.cacheOnce.Do(func() { s.cache = newPackCache(packCacheBytes) })
	h := &handler{ctx: ctx, s: st, repo: repo, rc: rc, stall: s.timeout(), cache: s.cache}
	w.Header().Set("Cache-Control", "no-cache")
	if rest == "info/refs" {
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		if v2 {
			h.advertiseV2(w)
		} else {
			h.advertiseV0(w)
		}
		return
	}
	if ct := r.Header.Get("Content-Type"); strings.TrimSpace(strings.Split(ct, ";")[0]) != "application/x-git-upload-pack-request" {
		httpError(w, http.StatusUnsupportedMediaType, "request Content-Type is %q; git sends application/x-git-upload-pack-request", ct)
		return
	}
	body, status, err := readBody(r, s.maxBytes())
	if errors.Is(err, errTooLarge) {
		err = fmt.Errorf("request body is larger than %d bytes", s.maxBytes())
	}
	if err != nil {
		// The deadline may have passed: leave time to say why.
		_ = rc.SetWriteDeadline(time.Now().Add(s.timeout()))
		httpError(w, status, "%v", err)
		return
	}
	w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
	if v2 {
		h.serveV2(w, body)
	} else {
		h.serveV0(w, body)
	}
}

func validRepoName(name string) bool {
	if name == "" || name == "." || name == ".." || len(name) > 255 {
		return false
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

// protocolV2 reports whether the client asked for protocol version 2 in
// the Git-Protocol header (colon-separated key=value pairs).
func protocolV2(h http.Header) bool {
	for _, v := range h.Values("Git-Protocol") {
		for _, kv := range strings.Split(v, ":") {
			if strings.TrimSpace(kv) == "version=2" {
				return true
			}
		}
	}
	return false
}

// readBody reads the whole request body, gunzipping it when git sent it
// compressed, and refusing more than max bytes either way.
func readBody(r *http.Request, max int64) ([]byte, int, error) {
	raw := &capReader{r: r.Body, left: max}
	var src io.Reader = raw
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(raw)
		if err != nil {
			return nil, readStatus(err), fmt.Errorf("request body is not valid gzip: %w", err)
		}
		defer zr.Close()
		src = &capReader{r: zr, left: max}
	default:
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("unsupported Content-Encoding %q (gzip or none)", enc)
	}
	b, err := io.ReadAll(src)
	if err != nil {
		return nil, readStatus(err), fmt.Errorf("reading the request body: %w", err)
	}
	return b, 0, nil
}

// errTooLarge is a request body over Server.MaxRequestBytes.
var errTooLarge = errors.New("request body is too large")

// capReader fails with errTooLarge once more than left bytes come.
type capReader struct {
	r    io.Reader
	left int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n, errTooLarge
	}
	return n, err
}

func readStatus(err error) int {
	if errors.Is(err, errTooLarge) {
		return http.StatusRequestEntityTooLarge
	}
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return http.StatusRequestTimeout
	}
	return http.StatusBadRequest
}

func httpError(w http.ResponseWriter, status int, format string, a ...any) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(status)
	fmt.Fprintf(w, format+"\n", a...)
}

// handler serves one request against one repository.
type handler struct {
	ctx   context.Context
	s     storage.Storer
	repo  string
	rc    *http.ResponseController
	stall time.Duration
	cache *packCache

	refsDone   bool
	head       plumbing.Hash
	headTarget string
	refList    []ref
	refsErr    error
}

// ref is one advertised reference.
type ref struct {
	name   string
	hash   plumbing.Hash
	peeled plumbing.Hash // target of an annotated tag, else zero
}

// refs lists HEAD's target (head, zero when unborn or detached onto a
// missing object), its symref target, and every ref under refs/ sorted by
// name.
func (h *handler) refs() (plumbing.Hash, string, []ref, error) {
	if !h.refsDone {
		h.head, h.headTarget, h.refList, h.refsErr = h.readRefs()
		h.refsDone = true
	}
	return h.head, h.headTarget, h.refList, h.refsErr
}

func (h *handler) readRefs() (head plumbing.Hash, headTarget string, out []ref, err error) {
	iter, err := h.s.IterReferences()
	if err != nil {
		return head, "", nil, err
	}
	byName := map[string]plumbing.Hash{}
	err = iter.ForEach(func(r *plumbing.Reference) error {
		if r.Type() == plumbing.HashReference && strings.HasPrefix(r.Name().String(), "refs/") {
			byName[r.Name().String()] = r.Hash()
		}
		return nil
	})
	if err != nil {
		return head, "", nil, err
	}
	for name, hash := range byName {
		out = append(out, ref{name: name, hash: hash, peeled: h.peel(hash)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	if hr, err := h.s.Reference(plumbing.HEAD); err == nil {
		switch hr.Type() {
		case plumbing.SymbolicReference:
			if t, ok := byName[hr.Target().String()]; ok {
				head, headTarget = t, hr.Target().String()
			}
		case plumbing.HashReference:
			head = hr.Hash()
		}
	}
	return head, headTarget, out, nil
}

// peel returns what the annotated tag h finally points at, or zero when h
// is not a tag.
func (h *handler) peel(hash plumbing.Hash) plumbing.Hash {
	o, err := h.s.EncodedObject(plumbing.TagObject, hash)
	if err != nil {
		return plumbing.ZeroHash
	}
	for i := 0; i < 64; i++ {
		t, err := object.DecodeTag(h.s, o)
		if err != nil {
			return plumbing.ZeroHash
		}
		o, err = h.s.EncodedObject(plumbing.AnyObject, t.Target)
		if err != nil {
			return plumbing.ZeroHash
		}
		if o.Type() != plumbing.TagObject {
			return t.Target
		}
	}
	return plumbing.ZeroHash
}

const v0Caps = "multi_ack multi_ack_detailed side-band side-band-64k ofs-delta shallow deepen-since deepen-not deepen-relative no-progress include-tag object-format=sha1 " + agent

func (h *handler) advertiseV0(w http.ResponseWriter) {
	head, target, refs, err := h.refs()
	if err != nil {
		httpError(w, http.StatusInternalServerError, "listing the refs of %q: %v", h.repo, err)
		return
	}
	pw := newPktWriter(w)
	pw.line("# service=git-upload-pack\n")
	pw.flushPkt()
	caps := v0Caps
	if target != "" {
		caps = "symref=HEAD:" + target + " " + caps
	}
	first := true
	emit := func(hash plumbing.Hash, name string) {
		if first {
			pw.line("%s %s\x00%s\n", hash, name, caps)
			first = false
			return
		}
		pw.line("%s %s\n", hash, name)
	}
	if !head.IsZero() {
		emit(head, "HEAD")
	}
	for _, r := range refs {
		emit(r.hash, r.name)
		if !r.peeled.IsZero() {
			pw.line("%s %s^{}\n", r.peeled, r.name)
		}
	}
	if first {
		emit(plumbing.ZeroHash, "capabilities^{}")
	}
	pw.flushPkt()
	_ = pw.send()
}

func (h *handler) advertiseV2(w http.ResponseWriter) {
	pw := newPktWriter(w)
	pw.line("version 2\n")
	pw.line("%s\n", agent)
	pw.line("ls-refs\n")
	pw.line("fetch=shallow\n")
	pw.line("object-format=sha1\n")
	pw.flushPkt()
	_ = pw.send()
}

// protoErr sends an ERR pkt-line, which git prints as "remote error".
func protoErr(pw *pktWriter, err error) {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	pw.line("ERR %s\n", msg)
	_ = pw.send()
}

func (h *handler) serveV2(w http.ResponseWriter, body []byte) {
	pw := newPktWriter(w)
	req, err := parseV2Request(body)
	if err != nil {
		protoErr(pw, err)
		return
	}
	switch req.command {
	case "ls-refs":
		args, err := parseLsRefs(req.args)
		if err != nil {
			protoErr(pw, err)
			return
		}
		h.lsRefs(pw, args)
	case "fetch":
		freq, err := parseV2Fetch(req.args)
		if err != nil {
			protoErr(pw, err)
			return
		}
		h.fetchV2(pw, freq)
	default:
		protoErr(pw, &requestError{msg: fmt.Sprintf("unknown command %q; this server supports ls-refs and fetch", truncate([]byte(req.command)))})
	}
}

func (h *handler) lsRefs(pw *pktWriter, a *lsRefsArgs) {
	head, target, refs, err := h.refs()
	if err != nil {
		protoErr(pw, fmt.Errorf("listing refs: %w", err))
		return
	}
	match := func(name string) bool {
		if len(a.prefixes) == 0 {
			return true
		}
		for _, p := range a.prefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	if !head.IsZero() && match("HEAD") {
		line := head.String() + " HEAD"
		if a.symrefs && target != "" {
			line += " symref-target:" + target
		}
		if p := h.peel(head); a.peel && !p.IsZero() {
			line += " peeled:" + p.String()
		}
		pw.line("%s\n", line)
	}
	for _, r := range refs {
		if !match(r.name) {
			continue
		}
		line := r.hash.String() + " " + r.name
		if a.peel && !r.peeled.IsZero() {
			line += " peeled:" + r.peeled.String()
		}
		pw.line("%s\n", line)
	}
	pw.flushPkt()
	_ = pw.send()
}

// checkWants refuses wants that are not reachable from this repository's
// refs: a client may only fetch what the repository publishes.
func (h *handler) checkWants(wants []plumbing.Hash) error {
	_, _, refs, err := h.refs()
	if err != nil {
		return fmt.Errorf("listing refs: %w", err)
	}
	tips := map[plumbing.Hash]bool{}
	var commits []plumbing.Hash
	for _, r := range refs {
		tips[r.hash] = true
		c := r.hash
		if !r.peeled.IsZero() {
			tips[r.peeled] = true
			c = r.peeled
		}
		commits = append(commits, c)
	}
	var missing []plumbing.Hash
	for _, w := range wants {
		if !tips[w] {
			missing = append(missing, w)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	// Not a tip: accept commits in the history of one.
	reach := map[plumbing.Hash]bool{}
	queue := commits
	wk := &walker{ctx: h.ctx, s: h.s}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if reach[c] {
			continue
		}
		reach[c] = true
		co, err := wk.commit(c)
		if err != nil {
			if ctxErr := h.ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			continue
		}
		queue = append(queue, co.ParentHashes...)
	}
	for _, m := range missing {
		if !reach[m] {
			return fmt.Errorf("upload-pack: not our ref %s", m)
		}
	}
	return nil
}

// common returns the haves that name commits in this repository.
func (h *handler) common(haves []plumbing.Hash) (common []plumbing.Hash, known map[plumbing.Hash]bool) {
	wk := &walker{ctx: h.ctx, s: h.s}
	known = map[plumbing.Hash]bool{}
	for _, hv := range haves {
		if !known[hv] && wk.hasCommit(hv) {
			known[hv] = true
			common = append(common, hv)
		}
	}
	return common, known
}

func (h *handler) serveV0(w http.ResponseWriter, body []byte) {
	pw := newPktWriter(w)
	req, err := parseV0Request(body)
	if err != nil {
		protoErr(pw, err)
		return
	}
	if err := h.checkWants(req.wants); err != nil {
		protoErr(pw, err)
		return
	}
	common, known := h.common(req.haves)
	var res *packResult
	if req.deepens() {
		// The shallow update comes first, in every answer of a deepening
		// fetch.
		res, err = h.result(req, common)
		if err != nil {
			protoErr(pw, err)
			return
		}
		for _, c := range res.shallow {
			pw.line("shallow %s", c)
		}
		for _, c := range res.unshallow {
			pw.line("unshallow %s", c)
		}
		pw.flushPkt()
	}
	if !req.negotiate {
		_ = pw.send()
		return
	}
	multi := req.multiAck || req.multiAckDetailed
	var last plumbing.Hash
	sentReady, gotOther := false, false
	for _, hv := range req.haves {
		if known[hv] {
			last = hv
			switch {
			case req.multiAckDetailed:
				pw.line("ACK %s common\n", hv)
			case req.multiAck:
				pw.line("ACK %s continue\n", hv)
			case hv == common[0]:
				pw.line("ACK %s\n", hv)
			}
			continue
		}
		gotOther = true
		if multi && len(common) > 0 && !req.done {
			if req.multiAckDetailed {
				sentReady = true
				pw.line("ACK %s ready\n", hv)
			} else {
				pw.line("ACK %s continue\n", hv)
			}
		}
	}
	if !req.done {
		if req.multiAckDetailed && len(common) > 0 && !gotOther && !sentReady {
			pw.line("ACK %s ready\n", last)
		}
		if len(common) == 0 || multi {
			pw.line("NAK\n")
		}
		_ = pw.send()
		return
	}
	switch {
	case len(common) == 0:
		pw.line("NAK\n")
	case multi:
		pw.line("ACK %s\n", last)
	}
	if res == nil {
		res, err = h.result(req, common)
		if err != nil {
			protoErr(pw, err)
			return
		}
	}
	band := byte(0)
	if req.sideBand || req.sideBand64k {
		band = 1
	}
	h.sendPack(pw, req, res, band, req.sideBand && !req.sideBand64k)
}

func (h *handler) fetchV2(pw *pktWriter, req *fetchRequest) {
	if err := h.checkWants(req.wants); err != nil {
		protoErr(pw, err)
		return
	}
	common, _ := h.common(req.haves)
	if !req.done {
		pw.line("acknowledgments\n")
		for _, c := range common {
			pw.line("ACK %s\n", c)
		}
		if len(common) == 0 {
			pw.line("NAK\n")
			pw.flushPkt()
			_ = pw.send()
			return
		}
		pw.line("ready\n")
		pw.delim()
	}
	res, err := h.result(req, common)
	if err != nil {
		protoErr(pw, err)
		return
	}
	if req.deepens() || len(req.shallows) > 0 {
		pw.line("shallow-info\n")
		for _, c := range res.shallow {
			pw.line("shallow %s", c)
		}
		for _, c := range res.unshallow {
			pw.line("unshallow %s", c)
		}
		pw.delim()
	}
	pw.line("packfile\n")
	h.sendPack(pw, req, res, 1, false)
}

// result returns the shallow update and pack answering req, from the cache
// when the same fetch was answered before.
func (h *handler) result(req *fetchRequest, common []plumbing.Hash) (*packResult, error) {
	_, _, refs, err := h.refs()
	if err != nil {
		return nil, fmt.Errorf("listing refs: %w", err)
	}
	ct := cut{depth: req.depth, relative: req.relative, since: req.since}
	for _, name := range req.not {
		c, err := h.resolve(name)
		if err != nil {
			return nil, err
		}
		ct.not = append(ct.not, c)
	}
	return h.cache.get(h.ctx, cacheKey(req, ct, common, refs), func() (*packResult, error) {
		wk := &walker{ctx: h.ctx, s: h.s}
		pl, err := wk.plan(req.wants, common, req.shallows, ct)
		if err != nil {
			return nil, err
		}
		objs := pl.objects
		if req.includeTag {
			objs = h.withTags(objs)
		}
		// Deltas pay off between versions of a file; a pack of one commit
		// holds one version of each, and go-git's delta search would cost
		// several times the rest of the work for a few percent of size.
		window := uint(packWindow)
		if pl.commits <= 1 {
			window = 0
		}
		var buf bytes.Buffer
		if err := encodePack(&buf, ctxObjects{h.s, h.ctx}, objs, !req.ofsDelta, window); err != nil {
			return nil, fmt.Errorf("building the pack for %q: %w", h.repo, err)
		}
		return &packResult{shallow: pl.shallow, unshallow: pl.unshallow, pack: buf.Bytes(), objects: len(objs)}, nil
	})
}

// resolve finds the commit deepen-not names: a full ref name, a tag or
// branch name, or a commit id.
func (h *handler) resolve(name string) (plumbing.Hash, error) {
	_, _, refs, err := h.refs()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	for _, full := range []string{name, "refs/" + name, "refs/tags/" + name, "refs/heads/" + name} {
		for _, r := range refs {
			if r.name == full {
				if !r.peeled.IsZero() {
					return r.peeled, nil
				}
				return r.hash, nil
			}
		}
	}
	if plumbing.IsHash(name) {
		if id := plumbing.NewHash(name); (&walker{ctx: h.ctx, s: h.s}).hasCommit(id) {
			return id, nil
		}
	}
	return plumbing.ZeroHash, &requestError{msg: fmt.Sprintf("deepen-not %q: no such ref in repository %q", truncate([]byte(name)), h.repo)}
}

// bandWriter frames pack bytes as side-band data, or passes them through
// when the client did not ask for side-band.
type bandWriter struct {
	h     *handler
	pw    *pktWriter
	band  byte
	small bool // old side-band: 1000-byte lines
}

func (b *bandWriter) Write(p []byte) (int, error) {
	// Pieces of 64 KiB, each with its own stall limit: a pack may take a
	// slow client longer than Timeout, but never a stall that long.
	for q := p; len(q) > 0 && b.pw.err == nil; {
		n := min(len(q), 64<<10)
		_ = b.h.rc.SetWriteDeadline(time.Now().Add(b.h.stall))
		if b.band == 0 {
			if _, err := b.pw.w.Write(q[:n]); err != nil {
				b.pw.err = err
			}
		} else {
			chunk := maxBandData
			if b.small {
				chunk = 995
			}
			for r := q[:n]; len(r) > 0; {
				m := min(len(r), chunk)
				b.pw.band(b.band, r[:m])
				r = r[m:]
			}
		}
		q = q[n:]
	}
	if b.pw.err != nil {
		return 0, b.pw.err
	}
	return len(p), nil
}

func (h *handler) sendPack(pw *pktWriter, req *fetchRequest, res *packResult, band byte, small bool) {
	if band != 0 && !req.noProgress {
		pw.band(2, []byte(fmt.Sprintf("Counting objects: %d, done.\n", res.objects)))
	}
	bw := &bandWriter{h: h, pw: pw, band: band, small: small}
	_, _ = bw.Write(res.pack)
	if band != 0 {
		pw.flushPkt()
	}
	_ = pw.send()
}

// withTags adds the annotated tags of this repository that point at an
// object being sent (git's include-tag).
func (h *handler) withTags(objs []plumbing.Hash) []plumbing.Hash {
	_, _, refs, err := h.refs()
	if err != nil {
		return objs
	}
	in := make(map[plumbing.Hash]bool, len(objs))
	for _, o := range objs {
		in[o] = true
	}
	for _, r := range refs {
		if r.peeled.IsZero() || in[r.hash] || !in[r.peeled] {
			continue
		}
		// Add the whole chain from the ref down to the peeled object.
		hash := r.hash
		for i := 0; i < 64 && !in[hash]; i++ {
			o, err := h.s.EncodedObject(plumbing.TagObject, hash)
			if err != nil {
				break
			}
			t, err := object.DecodeTag(h.s, o)
			if err != nil {
				break
			}
			in[hash] = true
			objs = append(objs, hash)
			hash = t.Target
		}
	}
	return objs
}
