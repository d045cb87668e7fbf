// Package silentnet gives tests a TCP server on 127.0.0.1 that accepts
// connections and never sends a byte: the host that holds a network step
// until an idle limit or a deadline ends it.
package silentnet

import (
	"net"
	"sync"
	"testing"
)

// Listen starts the server and returns its host:port. Connections stay
// open, unanswered, until the test ends.
func Listen(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	return ln.Addr().String()
}
