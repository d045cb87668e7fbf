package web

import (
	"sort"
	"unicode/utf8"
)

// GraphNode is a plugin in a dependency graph, before layout.
type GraphNode struct {
	ID    string
	Label string
	URL   string // empty for a node that cannot be opened (missing)
	// State is root, allowed, blocked or missing; it picks the style and is
	// also written as text, so color is never the only cue.
	State string
}

// GraphEdge says From depends on To.
type GraphEdge struct {
	From, To string
}

// Graph is a laid-out graph, ready for inline SVG.
type Graph struct {
	Width, Height int
	Nodes         []PlacedNode
	Edges         []PlacedEdge
}

// PlacedNode is a node with its box.
type PlacedNode struct {
	GraphNode
	Depth      int
	X, Y, W, H int
	// Text is Label shortened to fit the box; Label stays in the tooltip.
	Text string
	// TextX, TextY anchor the centered label.
	TextX, TextY int
}

// PlacedEdge is a line from the bottom of a dependent to the top of its
// dependency.
type PlacedEdge struct {
	From, To       string
	X1, Y1, X2, Y2 int
}

// Graph geometry, in SVG user units.
const (
	nodeW   = 200
	nodeH   = 44
	gapX    = 24
	gapY    = 56
	margin  = 16
	maxText = 24
)

// LayoutGraph places nodes in layers by their distance from root (breadth
// first along the edges), each layer sorted by ID and centered. Nodes not
// reachable from root go in one layer below the rest. The result depends
// only on the input sets, not on their order.
func LayoutGraph(root string, nodes []GraphNode, edges []GraphEdge) Graph {
	byID := map[string]GraphNode{}
	for _, n := range nodes {
		byID[n.ID] = n
	}
	out := map[string][]string{}
	for _, e := range edges {
		if _, ok := byID[e.From]; !ok {
			continue
		}
		if _, ok := byID[e.To]; !ok {
			continue
		}
		out[e.From] = append(out[e.From], e.To)
	}
	for k := range out {
		sort.Strings(out[k])
	}
	depth := map[string]int{}
	if _, ok := byID[root]; ok {
		depth[root] = 0
		queue := []string{root}
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			for _, m := range out[n] {
				if _, seen := depth[m]; !seen {
					depth[m] = depth[n] + 1
					queue = append(queue, m)
				}
			}
		}
	}
	maxDepth := -1
	for _, d := range depth {
		maxDepth = max(maxDepth, d)
	}
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if _, ok := depth[id]; !ok {
			depth[id] = maxDepth + 1
		}
	}
	layers := map[int][]string{}
	nLayers := 0
	for _, id := range ids {
		d := depth[id]
		layers[d] = append(layers[d], id)
		nLayers = max(nLayers, d+1)
	}
	widest := 0
	for _, l := range layers {
		widest = max(widest, len(l))
	}
	g := Graph{Width: 2*margin + max(widest, 1)*nodeW + max(widest-1, 0)*gapX}
	if nLayers > 0 {
		g.Height = 2*margin + nLayers*nodeH + (nLayers-1)*gapY
	}
	pos := map[string]PlacedNode{}
	for d := 0; d < nLayers; d++ {
		l := layers[d]
		rowW := len(l)*nodeW + max(len(l)-1, 0)*gapX
		x0 := (g.Width - rowW) / 2
		y := margin + d*(nodeH+gapY)
		for i, id := range l {
			x := x0 + i*(nodeW+gapX)
			p := PlacedNode{GraphNode: byID[id], Depth: d, X: x, Y: y, W: nodeW, H: nodeH,
				Text: shorten(byID[id].Label, maxText), TextX: x + nodeW/2, TextY: y + nodeH/2 + 5}
			pos[id] = p
			g.Nodes = append(g.Nodes, p)
		}
	}
	for _, from := range ids {
		for _, to := range out[from] {
			a, b := pos[from], pos[to]
			g.Edges = append(g.Edges, PlacedEdge{From: from, To: to,
				X1: a.X + a.W/2, Y1: a.Y + a.H, X2: b.X + b.W/2, Y2: b.Y})
		}
	}
	return g
}

func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
