package capability

import "sync"

// A textArena holds the text of one plugin's files while its report is
// computed: files are read into large chunks instead of one allocation
// each, and the chunks go back to a pool when the report is done, so that
// reading a marketplace allocates (and collects) a few chunks instead of
// every byte of every plugin again. Nothing a Report holds points into
// the arena (its strings are copies), which TestReportOutlivesArena
// checks. Not safe for concurrent use; the pool behind it is.
type textArena struct {
	chunks []*[]byte
	cur    []byte // the free end of the last chunk
}

const (
	chunkSize = 1 << 20
	// A file larger than bigText gets a buffer of its own, not pooled.
	bigText = chunkSize / 4
)

var chunks = sync.Pool{New: func() any {
	b := make([]byte, chunkSize)
	return &b
}}

// alloc returns n bytes of the arena, for reading a file into; what they
// hold is not zeroed.
func (a *textArena) alloc(n int) []byte {
	if n > bigText {
		return make([]byte, n)
	}
	if len(a.cur) < n {
		c := chunks.Get().(*[]byte)
		a.chunks = append(a.chunks, c)
		a.cur = *c
	}
	b := a.cur[:n:n]
	a.cur = a.cur[n:]
	return b
}

// release gives the chunks back to the pool: nothing alloc returned may be
// used after it.
func (a *textArena) release() {
	for _, c := range a.chunks {
		chunks.Put(c)
	}
	a.chunks, a.cur = nil, nil
}
