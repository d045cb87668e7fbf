// Package progress draws a network step's progress on a terminal.
package progress

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Bar draws a git transfer on a terminal: the bytes the step receives
// (see Add) and the phase git's server reports on its progress channel
// ("Counting objects:  45% (123/270)"), instead of that raw text.
type Bar struct {
	desc string
	bar  *progressbar.ProgressBar
	term *gatedWriter

	mu    sync.Mutex
	line  []byte
	phase string
	done  sync.Once
}

// NewBar returns a bar titled desc drawn on term (a terminal).
func NewBar(term io.Writer, desc string) *Bar {
	return newBar(term, desc, 100*time.Millisecond)
}

// newBar redraws at most once per throttle.
func newBar(term io.Writer, desc string, throttle time.Duration) *Bar {
	g := &gatedWriter{w: term}
	return &Bar{desc: desc, term: g, bar: progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(g),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionThrottle(throttle),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSpinnerType(14),
		// No redraw goroutine: the library's ticker reads the bar's start
		// time without its lock (a data race with the first draw) and
		// never stops after Exit. The spinner moves when bytes or a git
		// phase arrive, so a stalled transfer shows a still spinner.
		progressbar.OptionSetSpinnerChangeInterval(0))}
}

// Add counts n more bytes received. It is safe to call from any
// goroutine; netidle.OnRead(ctx, b.Add) counts every byte a step's
// connections read.
func (b *Bar) Add(n int) { b.bar.Add(n) }

// progressRE matches a git progress line: its phase, and a percentage
// and counts when it has them ("Compressing objects: 100% (3/3), done.").
var progressRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:remote: )?([A-Za-z][A-Za-z ]*?):\s+(?:(\d{1,3})% \((\d+)/(\d+)\)|(\d+))`)
})

// Write takes git's progress channel: lines end in \r (an update of the
// same line) or \n. Lines that are not progress are dropped.
func (b *Bar) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.line = append(b.line, p...)
	for {
		i := bytes.IndexAny(b.line, "\r\n")
		if i < 0 {
			break
		}
		b.parse(string(b.line[:i]))
		b.line = b.line[i+1:]
	}
	if len(b.line) > 4096 { // no line end from a hostile server: drop
		b.line = b.line[:0]
	}
	return len(p), nil
}

func (b *Bar) parse(line string) {
	m := progressRE().FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		return
	}
	phase := strings.ToLower(m[1])
	switch {
	case m[2] != "":
		phase += " " + m[2] + "% (" + m[3] + "/" + m[4] + ")"
	case m[5] != "":
		phase += " " + m[5]
	}
	if phase == b.phase {
		return
	}
	b.phase = phase
	b.bar.Describe(b.desc + ": " + phase)
}

// Clear takes the bar off the terminal until it next moves, so a line
// can be printed in its place.
func (b *Bar) Clear() {
	b.term.clear(false)
}

// Finish clears the bar from the terminal for good. It may be called more
// than once.
func (b *Bar) Finish() {
	b.done.Do(func() {
		b.bar.Exit()
		b.term.clear(true)
	})
}

// gatedWriter passes writes to w until it is closed. Bytes counted by a
// connection's reader may still arrive after Finish; once Finish closes
// the gate, nothing more reaches the terminal, so the caller owns it
// again.
//
// It also clears the bar: the library's own Clear reads the bar's state
// without its lock (a data race with a concurrent Add), so the width to
// blank out is counted here, from what was drawn.
type gatedWriter struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
	col    int // runes drawn since the last \r or \n
	width  int // the widest line drawn since the last clear
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return len(p), nil
	}
	for _, r := range string(p) {
		if r == '\r' || r == '\n' {
			g.col = 0
			continue
		}
		if g.col++; g.col > g.width {
			g.width = g.col
		}
	}
	return g.w.Write(p)
}

// clear blanks the line the bar was drawn on; close also lets nothing
// through afterwards.
func (g *gatedWriter) clear(close bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed && g.width > 0 {
		_, _ = io.WriteString(g.w, "\r"+strings.Repeat(" ", g.width)+"\r")
		g.col, g.width = 0, 0
	}
	if close {
		g.closed = true
	}
}
