package web

import (
	"fmt"
	"strconv"
	"strings"
)

// Charts are drawn on the server as inline SVG: the page needs no script
// and the console's Content-Security-Policy stays default-src 'none'.

// ChartSeries is one line of a chart: a value per label.
type ChartSeries struct {
	Name   string
	Values []int
}

// ChartPoint is one drawn point.
type ChartPoint struct {
	X, Y  float64
	Value int
	Label string
}

// ChartLine is a series as drawn.
type ChartLine struct {
	Name   string
	Class  string // series-0 ... series-7 (colours in the stylesheet)
	Points string // the polyline's points attribute
	Dots   []ChartPoint
	Last   int
}

// ChartTick is a labelled position on an axis.
type ChartTick struct {
	Pos   float64
	Label string
	// Anchor is the label's text-anchor (x axis): start, middle or end.
	Anchor string
}

// Chart is a line chart laid out for an SVG of Width × Height.
type Chart struct {
	ID, Title, Desc string
	Width, Height   int
	// The plot area.
	Left, Top, Right, Bottom float64
	Labels                   []string
	Series                   []ChartSeries
	Lines                    []ChartLine
	YTicks, XTicks           []ChartTick
	// Marker is an x position to draw a vertical line at (a revocation),
	// with its label; MarkerLabel "" draws none.
	Marker      float64
	MarkerLabel string
}

const (
	chartW, chartH         = 720, 280
	padL, padR, padT, padB = 48.0, 16.0, 16.0, 44.0
	maxXTicks              = 8
	seriesClasses          = 8
)

// LineChart lays out series over labels (one value per label each).
// markerAt, when in range, marks that label's position with markerLabel.
func LineChart(id, title, desc string, labels []string, series []ChartSeries, markerAt int, markerLabel string) Chart {
	c := Chart{ID: id, Title: title, Desc: desc, Width: chartW, Height: chartH, Labels: labels, Series: series,
		Left: padL, Top: padT, Right: chartW - padR, Bottom: chartH - padB}
	maxV := 1
	for _, s := range series {
		for _, v := range s.Values {
			maxV = max(maxV, v)
		}
	}
	// Ticks every step, a 1-2-5 number giving at most six of them.
	step := niceCeil((maxV + 4) / 5)
	top := (maxV + step - 1) / step * step
	x := func(i int) float64 {
		if len(labels) <= 1 {
			return (c.Left + c.Right) / 2
		}
		return c.Left + (c.Right-c.Left)*float64(i)/float64(len(labels)-1)
	}
	y := func(v int) float64 { return c.Bottom - (c.Bottom-c.Top)*float64(v)/float64(top) }
	for v := 0; v <= top; v += step {
		c.YTicks = append(c.YTicks, ChartTick{Pos: y(v), Label: strconv.Itoa(v)})
	}
	every := max(1, (len(labels)+maxXTicks-1)/maxXTicks)
	for i := 0; i < len(labels); i += every {
		c.XTicks = append(c.XTicks, ChartTick{Pos: x(i), Label: labels[i], Anchor: "middle"})
	}
	if n := len(c.XTicks); n > 1 {
		c.XTicks[0].Anchor, c.XTicks[n-1].Anchor = "start", "end"
	}
	for si, s := range series {
		l := ChartLine{Name: s.Name, Class: fmt.Sprintf("series-%d", si%seriesClasses)}
		var pts []string
		for i, v := range s.Values {
			if i >= len(labels) {
				break
			}
			p := ChartPoint{X: x(i), Y: y(v), Value: v, Label: labels[i]}
			l.Dots = append(l.Dots, p)
			pts = append(pts, strconv.FormatFloat(p.X, 'f', 1, 64)+","+strconv.FormatFloat(p.Y, 'f', 1, 64))
			l.Last = v
		}
		l.Points = strings.Join(pts, " ")
		c.Lines = append(c.Lines, l)
	}
	if markerAt >= 0 && markerAt < len(labels) && markerLabel != "" {
		c.Marker, c.MarkerLabel = x(markerAt), markerLabel
	}
	return c
}

// niceCeil is the smallest of 1, 2, 5 × 10^k at or above v.
func niceCeil(v int) int {
	for p := 1; ; p *= 10 {
		for _, m := range []int{1, 2, 5} {
			if m*p >= v {
				return m * p
			}
		}
	}
}
