//go:build unix

package main

import (
	"bytes"
	"net"
	"regexp"
	"sync"
	"time"
)

// Partitions. Every member advertises a proxy in front of its client port
// and one in front of its peer port. A peer connection is attributed to
// the member that opened it by the X-Server-From header etcd's raft
// transport sends on every request (the first request of a connection is
// enough: a connection carries one member's requests). Cutting member i
// stops every byte to and from it, without closing any connection, as a
// switch that drops packets would: the bytes wait in the proxy and flow
// again, late, when the cut heals.
type netctl struct {
	mu     sync.Mutex
	cut    map[int]bool
	healed chan struct{} // closed at every heal
	ids    map[string]int
	ls     []net.Listener
}

func newNetctl() *netctl {
	return &netctl{cut: map[int]bool{}, healed: make(chan struct{}), ids: map[string]int{}}
}

func (n *netctl) setID(id string, i int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ids[id] = i
}

func (n *netctl) index(id string) (int, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	i, ok := n.ids[id]
	return i, ok
}

// isolate cuts member i off from the other members and from the replicas.
func (n *netctl) isolate(i int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut[i] = true
}

func (n *netctl) heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.cut)
	close(n.healed)
	n.healed = make(chan struct{})
}

// wait blocks while traffic between src (-1: a replica, or unknown) and
// dst is cut.
func (n *netctl) wait(src, dst int) {
	for {
		n.mu.Lock()
		blocked := n.cut[dst] || (src >= 0 && n.cut[src])
		healed := n.healed
		n.mu.Unlock()
		if !blocked {
			return
		}
		<-healed
	}
}

func (n *netctl) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, l := range n.ls {
		l.Close()
	}
}

type proxy struct {
	n      *netctl
	ln     net.Listener
	dst    int
	peer   bool
	target string
}

func (n *netctl) listen(dst int, peer bool) (*proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.ls = append(n.ls, l)
	n.mu.Unlock()
	p := &proxy{n: n, ln: l, dst: dst, peer: peer}
	go p.serve()
	return p, nil
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

var fromRE = regexp.MustCompile(`(?i)\r\nX-Server-From: *([0-9a-f]+)\r\n`)

func (p *proxy) handle(c net.Conn) {
	defer c.Close()
	src := -1
	var head []byte
	if p.peer {
		// Read the first request's header to learn who sent it.
		buf := make([]byte, 4096)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for len(head) < 16<<10 && !bytes.Contains(head, []byte("\r\n\r\n")) {
			k, err := c.Read(buf)
			head = append(head, buf[:k]...)
			if err != nil {
				break
			}
		}
		c.SetReadDeadline(time.Time{})
		if m := fromRE.FindSubmatch(head); m != nil {
			if i, ok := p.n.index(string(m[1])); ok {
				src = i
			}
		}
	}
	p.n.wait(src, p.dst)
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer up.Close()
	if len(head) > 0 {
		if _, err := up.Write(head); err != nil {
			return
		}
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn, from, to int) {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 32<<10)
		for {
			k, err := src.Read(buf)
			if k > 0 {
				p.n.wait(from, to)
				if _, werr := dst.Write(buf[:k]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	go pipe(up, c, src, p.dst)
	go pipe(c, up, src, p.dst)
	<-done // one side ended: the deferred closes end the other
}
