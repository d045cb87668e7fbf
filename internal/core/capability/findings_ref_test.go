package capability

// The scans for findings as they were written before they were fused
// into one pass: the reference that findings_equal_test.go holds the
// fused scan to.

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// scanText looks for the findings any text file may hold.
func (r *reader) refScanText(rel string, data []byte) {
	md := isMarkdown(rel)
	if md {
		r.refScanUnicode(rel, data)
		r.refScanComments(rel, data)
	}
	r.refScanEncoded(rel, data)
}

func (r *reader) refScanUnicode(rel string, data []byte) {
	var lines lineIdx
	var reported map[[2]int]bool // (bidi 0 / invisible 1, line) already reported
	// Every character looked for starts with one of the bytes 0xC2, 0xE1,
	// 0xE2, 0xEF or 0xF3 (UTF-8 of U+00AD, U+180E, U+2000-U+2FFF, U+FEFF,
	// U+E0000-U+EFFFF): skip ASCII eight bytes at a time, and decode only
	// at those.
	for off := 0; off < len(data); {
		off = refNextHigh(data, off)
		if off >= len(data) {
			break
		}
		switch data[off] {
		case 0xC2, 0xE1, 0xE2, 0xEF, 0xF3:
			if reported == nil {
				reported = map[[2]int]bool{}
			}
			off += r.refUnicodeAt(rel, data, off, &lines, reported)
		default:
			off++
		}
	}
}

// nextHigh is the offset of the first byte at or after off that is not
// ASCII, len(data) when there is none.
func refNextHigh(data []byte, off int) int {
	for ; off+8 <= len(data); off += 8 {
		if binary.LittleEndian.Uint64(data[off:])&0x8080808080808080 != 0 {
			break
		}
	}
	for ; off < len(data) && data[off] < 0x80; off++ {
	}
	return off
}

// unicodeAt checks the rune at data[off] and returns its size.
func (r *reader) refUnicodeAt(rel string, data []byte, off int, linesp *lineIdx, reported map[[2]int]bool) int {
	lines := *linesp
	defer func() { *linesp = lines }()
	{
		c, size := utf8.DecodeRune(data[off:])
		// Zero-width joiners inside emoji sequences are how emoji are
		// written; only those next to plain text count.
		isBidi := bidi(c)
		if isBidi || invisible(c, off) && !(c == 0x200D && off > 0 && off+size < len(data) && emojiAround(data, off, size)) {
			if lines == nil {
				lines = lineIndex(data)
			}
			line := lines.at(off)
			switch {
			case isBidi && !reported[[2]int{0, line}]:
				reported[[2]int{0, line}] = true
				r.find(KindBidiUnicode, rel, line, "bidirectional control U+%04X: the text shown differs from the text read", c)
			case !isBidi && !reported[[2]int{1, line}]:
				reported[[2]int{1, line}] = true
				r.find(KindInvisibleUnicode, rel, line, "invisible character U+%04X: text a reader cannot see reaches the model", c)
			}
		}
		return size
	}
}

// scanComments finds HTML comments in Markdown (outside code fences) that
// address the model.
func (r *reader) refScanComments(rel string, text []byte) {
	if !bytes.Contains(text, []byte("<!--")) {
		return
	}
	inFence := false
	lineStart := 0
	line := 1
	for lineStart < len(text) {
		end := bytes.IndexByte(text[lineStart:], '\n')
		if end < 0 {
			end = len(text) - lineStart
		}
		l := text[lineStart : lineStart+end]
		if t := bytes.TrimSpace(l); bytes.HasPrefix(t, []byte("```")) || bytes.HasPrefix(t, []byte("~~~")) {
			inFence = !inFence
		} else if !inFence {
			if i := bytes.Index(l, []byte("<!--")); i >= 0 {
				start := lineStart + i
				closeAt := bytes.Index(text[start+4:], []byte("-->"))
				body := text[start+4:]
				if closeAt >= 0 {
					body = body[:closeAt]
				}
				if instructionRe.Regexp().Match(body) && len(bytes.Fields(body)) >= 4 {
					r.find(KindHiddenComment, rel, line, "HTML comment, hidden when rendered, addresses the model: %q", clip(strings.Join(strings.Fields(string(body)), " ")))
				}
				if closeAt >= 0 {
					skip := start + 4 + closeAt + 3
					line += bytes.Count(text[lineStart:skip], []byte("\n"))
					lineStart = skip
					if nl := bytes.IndexByte(text[lineStart:], '\n'); nl >= 0 && !bytes.Contains(text[lineStart:lineStart+nl], []byte("<!--")) {
						lineStart += nl + 1
						line++
					}
					continue
				}
				return
			}
		}
		lineStart += end + 1
		line++
	}
}

// scanEncoded finds base64 and hex blobs (runs of at least 40 base64 or
// 48 hex characters, or 16 \xNN escapes) that decode to a script. One
// pass over the bytes: a regular expression with a counted repetition
// costs far more than reading the file.
func (r *reader) refScanEncoded(rel string, data []byte) {
	if len(data) < 40 {
		return
	}
	var lines lineIdx
	at := func(off int) int {
		if lines == nil {
			lines = lineIndex(data)
		}
		return lines.at(off)
	}
	found := 0
	for start, end := 0, 0; found < 200; start = end + 1 {
		if start, end = refNextRun(data, start); start < 0 {
			break
		}
		found++
		blob := string(data[start:end])
		if refIsHex(blob) {
			if len(blob) >= 48 {
				if dec, err := hex.DecodeString(blob[:len(blob)/2*2]); err == nil && looksLikeScript(dec) {
					r.find(KindEncodedScript, rel, at(start), "hex text decodes to a script: %q", clip(string(dec)))
				}
			}
		} else if dec, ok := refDecodeBase64(blob); ok && looksLikeScript(dec) {
			r.find(KindEncodedScript, rel, at(start), "base64 text decodes to a script: %q", clip(string(dec)))
		}
	}
	if bytes.Contains(data, []byte(`\x`)) {
		r.refScanHexEscapes(rel, data, at)
	}
}

// nextRun returns the first run [start, end) of at least minRun base64
// bytes at or after from, which must be 0 or follow a byte that is not
// base64; start is -1 when there is none. It looks at the last byte of
// each window of minRun bytes first: when that byte is not base64 no run
// that long starts in the window, so most of the text is skipped without
// being looked at, and no byte is looked at more than twice.
func refNextRun(data []byte, from int) (start, end int) {
	i := from
	for i+minRun <= len(data) {
		j := i + minRun - 1
		if !base64Bytes[data[j]] {
			i = j + 1
			continue
		}
		k := j
		for k > i && base64Bytes[data[k-1]] {
			k--
		}
		if k > i {
			i = k // data[k-1] is not base64: a run may start at k
			continue
		}
		end = j + 1
		for end < len(data) && base64Bytes[data[end]] {
			end++
		}
		return i, end
	}
	return -1, -1
}

// scanHexEscapes finds runs of \xNN escapes that decode to a script.
func (r *reader) refScanHexEscapes(rel string, data []byte, at func(int) int) {
	for i := 0; i+4 <= len(data); {
		j := i
		var dec []byte
		for j+4 <= len(data) && data[j] == '\\' && data[j+1] == 'x' && isHexByte(data[j+2]) && isHexByte(data[j+3]) {
			b, _ := hex.DecodeString(string(data[j+2 : j+4]))
			dec = append(dec, b...)
			j += 4
		}
		if len(dec) >= 16 && looksLikeScript(dec) {
			r.find(KindEncodedScript, rel, at(i), "hex escapes decode to a script: %q", clip(string(dec)))
		}
		if j > i {
			i = j
		} else {
			i++
		}
	}
}

func refIsHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHexByte(s[i]) {
			return false
		}
	}
	return true
}

func refDecodeBase64(s string) ([]byte, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, true
		}
	}
	// A blob cut anywhere: decode the longest prefix of whole quanta.
	t := strings.TrimRight(s, "=")
	t = t[:len(t)/4*4]
	if b, err := base64.StdEncoding.DecodeString(t); err == nil {
		return b, true
	}
	return nil, false
}
