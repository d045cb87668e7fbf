package gitserver

import (
	"bufio"
	"fmt"
	"io"
)

// pkt-line framing (gitprotocol-common(5)): four hex digits giving the
// length of the line including those four digits, then the payload. Three
// lengths are special: 0000 flush, 0001 delimiter (protocol v2), 0002
// response end (protocol v2).

const (
	maxPktLen  = 65520         // largest pkt-line, length prefix included
	maxPktData = maxPktLen - 4 // largest payload
	// maxBandData is the largest side-band-64k payload after the band byte.
	maxBandData = maxPktData - 1
)

type pktKind int

const (
	pktData pktKind = iota
	pktFlush
	pktDelim
	pktEnd
)

// pkt is one decoded pkt-line.
type pkt struct {
	kind pktKind
	data []byte // payload of a data line, trailing LF removed
}

// pktError is a malformed pkt-line stream; off is the byte offset of the
// bad line in the request body.
type pktError struct {
	off int
	msg string
}

func (e *pktError) Error() string {
	return fmt.Sprintf("malformed pkt-line at byte %d of the request: %s", e.off, e.msg)
}

// splitPkts decodes a whole request body into pkt-lines. Every byte must
// belong to a well-formed line.
func splitPkts(b []byte) ([]pkt, error) {
	var out []pkt
	off := 0
	for off < len(b) {
		if len(b)-off < 4 {
			return nil, &pktError{off, "truncated length prefix"}
		}
		n, ok := hex4(b[off : off+4])
		if !ok {
			return nil, &pktError{off, fmt.Sprintf("length prefix %q is not four hex digits", b[off:off+4])}
		}
		switch {
		case n == 0:
			out = append(out, pkt{kind: pktFlush})
			off += 4
			continue
		case n == 1:
			out = append(out, pkt{kind: pktDelim})
			off += 4
			continue
		case n == 2:
			out = append(out, pkt{kind: pktEnd})
			off += 4
			continue
		case n < 4:
			return nil, &pktError{off, fmt.Sprintf("invalid length %d", n)}
		case n > maxPktLen:
			return nil, &pktError{off, fmt.Sprintf("length %d exceeds %d", n, maxPktLen)}
		case off+n > len(b):
			return nil, &pktError{off, fmt.Sprintf("line of length %d runs past the end of the request", n)}
		}
		data := b[off+4 : off+n]
		if len(data) > 0 && data[len(data)-1] == '\n' {
			data = data[:len(data)-1]
		}
		out = append(out, pkt{kind: pktData, data: data})
		off += n
	}
	return out, nil
}

func hex4(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, false
		}
		n = n<<4 | int(v)
	}
	return n, true
}

// pktWriter writes pkt-lines to a buffered writer; the first write error
// sticks and later writes are no-ops.
type pktWriter struct {
	w   *bufio.Writer
	err error
}

func newPktWriter(w io.Writer) *pktWriter {
	return &pktWriter{w: bufio.NewWriterSize(w, 64<<10)}
}

func (p *pktWriter) line(format string, a ...any) {
	p.raw([]byte(fmt.Sprintf(format, a...)))
}

// raw writes one data line with payload b (b must fit in one line).
func (p *pktWriter) raw(b []byte) {
	if p.err != nil {
		return
	}
	if len(b) > maxPktData {
		b = b[:maxPktData]
	}
	_, p.err = fmt.Fprintf(p.w, "%04x", len(b)+4)
	if p.err == nil {
		_, p.err = p.w.Write(b)
	}
}

// band writes b on side-band channel ch, split into lines as needed.
func (p *pktWriter) band(ch byte, b []byte) {
	for len(b) > 0 && p.err == nil {
		n := min(len(b), maxBandData)
		_, p.err = fmt.Fprintf(p.w, "%04x%c", n+5, ch)
		if p.err == nil {
			_, p.err = p.w.Write(b[:n])
		}
		b = b[n:]
	}
}

func (p *pktWriter) flushPkt() { p.special("0000") }
func (p *pktWriter) delim()    { p.special("0001") }

func (p *pktWriter) special(s string) {
	if p.err == nil {
		_, p.err = p.w.WriteString(s)
	}
}

// send pushes buffered bytes to the underlying writer.
func (p *pktWriter) send() error {
	if p.err == nil {
		p.err = p.w.Flush()
	}
	return p.err
}
