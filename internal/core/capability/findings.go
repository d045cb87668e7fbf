package capability

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/bits"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/wharfhq/wharf/internal/core/lazyre"
)

// Finding is one advisory content finding: what, where (a file relative
// to the plugin root and a 1-based line, 0 when the whole file or no line
// applies) and why.
type Finding struct {
	Kind    string `json:"kind"`
	File    string `json:"file"`
	Line    int    `json:"line"`
	Message string `json:"message"`
}

func (f Finding) String() string {
	where := f.File
	if f.Line > 0 {
		where = fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	return fmt.Sprintf("%s: %s (%s)", where, f.Message, f.Kind)
}

// Finding kinds.
const (
	KindInvisibleUnicode = "invisible-unicode"
	KindBidiUnicode      = "bidi-unicode"
	KindHiddenComment    = "hidden-instructions"
	KindEncodedScript    = "encoded-script"
	KindDownloadAndRun   = "download-and-run"
	KindCredentialRead   = "credential-read"
	KindUndeclaredHost   = "undeclared-host"
	KindUnreadable       = "unreadable"
)

// FindingKinds lists every kind, for documentation and policy.
var FindingKinds = []string{KindInvisibleUnicode, KindBidiUnicode, KindHiddenComment, KindEncodedScript,
	KindDownloadAndRun, KindCredentialRead, KindUndeclaredHost, KindUnreadable}

// maxFindingsPerFile bounds the findings one file can add.
const maxFindingsPerFile = 20

func (r *reader) find(kind, file string, line int, format string, args ...any) {
	n := 0
	for _, f := range r.findings {
		if f.File == file && f.Kind == kind {
			n++
		}
	}
	if n >= maxFindingsPerFile {
		return
	}
	r.findings = append(r.findings, Finding{Kind: kind, File: file, Line: line, Message: fmt.Sprintf(format, args...)})
}

func sortFindings(fs []Finding) {
	sort.Slice(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Message < b.Message
	})
}

// scanText looks for the findings any text file may hold.
func (r *reader) scanText(rel string, data []byte) {
	md := isMarkdown(rel)
	if md {
		r.scanUnicode(rel, data)
		r.scanComments(rel, data)
	}
	r.scanEncoded(rel, data)
}

// invisible reports characters that render as nothing: zero-width
// characters, word joiners and invisible operators, the tag block (which
// can spell hidden ASCII) and the supplementary variation selectors
// (which can carry bytes); a BOM only past the start.
func invisible(c rune, at int) bool {
	switch {
	case c == 0x200B || c == 0x200C || c == 0x200D || c == 0x2060 || c == 0x180E || c == 0x00AD:
		return true
	case c >= 0x2061 && c <= 0x2064:
		return true
	case c == 0xFEFF:
		return at > 0
	case c >= 0xE0000 && c <= 0xE007F:
		return true
	case c >= 0xE0100 && c <= 0xE01EF:
		return true
	}
	return false
}

// bidi reports the bidirectional embedding, override and isolate controls
// (Trojan Source).
func bidi(c rune) bool { return c >= 0x202A && c <= 0x202E || c >= 0x2066 && c <= 0x2069 }

func (r *reader) scanUnicode(rel string, data []byte) {
	var lines lineIdx
	var reported map[[2]int]bool // (bidi 0 / invisible 1, line) already reported
	// Every character looked for starts with one of the bytes 0xC2, 0xE1,
	// 0xE2, 0xEF or 0xF3 (UTF-8 of U+00AD, U+180E, U+2000-U+2FFF, U+FEFF,
	// U+E0000-U+EFFFF): skip ASCII eight bytes at a time, and decode only
	// at those.
	for off := 0; off < len(data); {
		off = nextHigh(data, off)
		if off >= len(data) {
			break
		}
		switch data[off] {
		case 0xC2, 0xE1, 0xE2, 0xEF, 0xF3:
			if reported == nil {
				reported = map[[2]int]bool{}
			}
			off += r.unicodeAt(rel, data, off, &lines, reported)
		default:
			off++
		}
	}
}

// nextHigh is the offset of the first byte at or after off that is not
// ASCII, len(data) when there is none. It tests 32 bytes at a time (four
// words or'ed together, one branch), then 8, then one.
func nextHigh(data []byte, off int) int {
	const high = 0x8080808080808080
	for ; off+32 <= len(data); off += 32 {
		w := data[off : off+32 : off+32]
		if (binary.LittleEndian.Uint64(w[0:8])|binary.LittleEndian.Uint64(w[8:16])|
			binary.LittleEndian.Uint64(w[16:24])|binary.LittleEndian.Uint64(w[24:32]))&high != 0 {
			break
		}
	}
	for ; off+8 <= len(data); off += 8 {
		if binary.LittleEndian.Uint64(data[off:])&high != 0 {
			break
		}
	}
	for ; off < len(data) && data[off] < 0x80; off++ {
	}
	return off
}

// unicodeAt checks the rune at data[off] and returns its size.
func (r *reader) unicodeAt(rel string, data []byte, off int, linesp *lineIdx, reported map[[2]int]bool) int {
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

// emojiAround reports whether the runes around data[off:off+size] are
// emoji (or emoji modifiers), as in a joined emoji sequence.
func emojiAround(data []byte, off, size int) bool {
	prev, _ := utf8.DecodeLastRune(data[:off])
	next, _ := utf8.DecodeRune(data[off+size:])
	isEmoji := func(c rune) bool { return c >= 0x1F000 || c >= 0x2600 && c <= 0x27BF || c == 0xFE0F }
	return isEmoji(prev) && isEmoji(next)
}

// instructionWords mark a comment as written to the model rather than to
// the file's maintainers.
var instructionRe = lazyre.New(`(?i)\b(ignore (all|any|the|previous)|disregard|you (must|should|are|will)|do not (tell|mention|reveal|show)|` +
	`don't (tell|mention|reveal)|without (telling|asking|mentioning)|secretly|silently|system prompt|assistant|claude|` +
	`(always|never) (run|execute|call|send|include|use)|run the following|execute|exfiltrat|send (the|all|it)|upload)\b`)

// scanComments finds HTML comments in Markdown (outside code fences) that
// address the model.
func (r *reader) scanComments(rel string, text []byte) {
	open := []byte("<!--")
	next := bytes.Index(text, open) // the first "<!--" at or after lineStart, or -1
	if next < 0 {
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
			if next >= 0 && next < lineStart {
				if next = bytes.Index(text[lineStart:], open); next >= 0 {
					next += lineStart
				}
			}
			// "<!--" has no newline: one that starts on this line ends
			// on it.
			if next >= 0 && next < lineStart+end {
				start := next
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
					if nl := bytes.IndexByte(text[lineStart:], '\n'); nl >= 0 && !bytes.Contains(text[lineStart:lineStart+nl], open) {
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

var (
	scriptRe = lazyre.New(`(?i)(^#!|\b(curl|wget)\s|\|\s*(ba)?sh\b|\bbash\s+-[ic]\b|\bsh\s+-c\b|\beval\s*\(|\bexec\s*\(|\bimport\s+(os|subprocess|socket)\b|` +
		`\brequire\(['"]child_process|\bchild_process\b|\bsubprocess\.|\bos\.system\b|/dev/tcp/|\brm\s+-rf\b|\bpowershell\b|\binvoke-expression\b|\bnc\s+-e\b|\bchmod\s+\+x\b)`)
)

// scanEncoded finds base64 and hex blobs (runs of at least 40 base64 or
// 48 hex characters, or 16 \xNN escapes) that decode to a script. One
// pass over the bytes: a regular expression with a counted repetition
// costs far more than reading the file. A blob is decoded from the file's
// bytes into one buffer kept for the whole tree, not copied first.
func (r *reader) scanEncoded(rel string, data []byte) {
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
		if start, end = nextRun(data, start); start < 0 {
			break
		}
		found++
		blob := data[start:end]
		if isHex(blob) {
			if len(blob) >= 48 {
				n := len(blob) / 2 * 2
				dec := r.decodeBuf(n / 2)
				if _, err := hex.Decode(dec, blob[:n]); err == nil && looksLikeScript(dec) {
					r.find(KindEncodedScript, rel, at(start), "hex text decodes to a script: %q", clip(string(dec)))
				}
			}
		} else if dec, ok := r.decodeBase64(blob); ok && looksLikeScript(dec) {
			r.find(KindEncodedScript, rel, at(start), "base64 text decodes to a script: %q", clip(string(dec)))
		}
	}
	if bytes.Contains(data, []byte(`\x`)) {
		r.scanHexEscapes(rel, data, at)
	}
}

// decodeBuf is the reader's decode buffer, n bytes long; what it held
// before is overwritten.
func (r *reader) decodeBuf(n int) []byte {
	if cap(r.dec) < n {
		r.dec = make([]byte, n, max(n, 2*cap(r.dec)))
	}
	return r.dec[:n]
}

// minRun is the shortest run of base64 (or hex) bytes scanEncoded decodes.
const minRun = 40

// nextRun returns the first run [start, end) of at least minRun base64
// bytes at or after from, which must be 0 or follow a byte that is not
// base64; start is -1 when there is none. It looks at the last byte of
// each window of minRun bytes first: when that byte is not base64 no run
// that long starts in the window, so most of the text is skipped without
// being looked at. Going back from there it looks for the last byte that
// is not base64 eight bytes at a time (eight loads and no branch between
// them: a branch per byte is mispredicted at every word of prose), and
// stops at the bytes already known to be base64, so no byte is looked at
// twice.
func nextRun(data []byte, from int) (start, end int) {
	i := from
	known := from // data[i:known] is all base64
	for i+minRun <= len(data) {
		j := i + minRun - 1
		if notBase64[data[j]] != 0 {
			i = j + 1
			known = i
			continue
		}
		// k goes back to just past the last byte before j that is not
		// base64, or to known.
		k := j
		for k-8 >= known {
			w := data[k-8 : k : k]
			m := notBase64[w[0]] | notBase64[w[1]]<<1 | notBase64[w[2]]<<2 | notBase64[w[3]]<<3 |
				notBase64[w[4]]<<4 | notBase64[w[5]]<<5 | notBase64[w[6]]<<6 | notBase64[w[7]]<<7
			if m != 0 {
				k += bits.Len8(m) - 8
				break
			}
			k -= 8
		}
		for k > known && notBase64[data[k-1]] == 0 {
			k--
		}
		if k > known {
			// data[k-1] is not base64: a run may start at k, and
			// data[k:j+1] is base64.
			i, known = k, j+1
			continue
		}
		end = j + 1
		for end < len(data) && notBase64[data[end]] == 0 {
			end++
		}
		return i, end
	}
	return -1, -1
}

// scanHexEscapes finds runs of \xNN escapes that decode to a script.
func (r *reader) scanHexEscapes(rel string, data []byte, at func(int) int) {
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

// base64Bytes marks the bytes of the standard and URL base64 alphabets
// and padding.
var base64Bytes = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-") {
		t[c] = true
	}
	return t
}()

// notBase64 is 1 for the bytes base64Bytes does not mark, 0 for those it
// does.
var notBase64 = func() (t [256]uint8) {
	for c := range t {
		if !base64Bytes[c] {
			t[c] = 1
		}
	}
	return t
}()

func isBase64Byte(c byte) bool { return base64Bytes[c] }

func isHexByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isHex(s []byte) bool {
	for _, c := range s {
		if !isHexByte(c) {
			return false
		}
	}
	return true
}

// decodeBase64 decodes s as standard, raw standard, URL or raw URL
// base64, the first that takes it whole, else the longest prefix of whole
// standard quanta, into the reader's decode buffer.
func (r *reader) decodeBase64(s []byte) ([]byte, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		dec := r.decodeBuf(enc.DecodedLen(len(s)))
		if n, err := enc.Decode(dec, s); err == nil {
			return dec[:n], true
		}
	}
	// A blob cut anywhere: decode the longest prefix of whole quanta.
	t := bytes.TrimRight(s, "=")
	t = t[:len(t)/4*4]
	dec := r.decodeBuf(base64.StdEncoding.DecodedLen(len(t)))
	if n, err := base64.StdEncoding.Decode(dec, t); err == nil {
		return dec[:n], true
	}
	return nil, false
}

// looksLikeScript reports decoded bytes that are mostly printable text and
// hold a shell or script construct.
func looksLikeScript(b []byte) bool {
	if len(b) < 12 {
		return false
	}
	printable := 0
	for _, c := range b {
		if c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' || c == '\r' {
			printable++
		}
	}
	if printable*10 < len(b)*9 {
		return false
	}
	return scriptRe.Regexp().Match(b)
}

type lineIdx []int

func lineIndex(data []byte) lineIdx {
	idx := lineIdx{0}
	for i, c := range data {
		if c == '\n' {
			idx = append(idx, i+1)
		}
	}
	return idx
}

// at is the 1-based line of byte offset off.
func (l lineIdx) at(off int) int {
	return sort.Search(len(l), func(i int) bool { return l[i] > off })
}
