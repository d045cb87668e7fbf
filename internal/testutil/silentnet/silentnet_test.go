package silentnet

import (
	"net"
	"testing"
	"time"
)

// A client connects, and no byte arrives before its read deadline.
func TestListenAcceptsAndNeverAnswers(t *testing.T) {
	addr := Listen(t)
	for i := 0; i < 20; i++ { // more than any fixed buffer of held connections
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		n, err := c.Read(make([]byte, 1))
		if n != 0 || err == nil {
			t.Fatalf("connection %d read %d bytes, err %v; want a timeout", i, n, err)
		}
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			t.Fatalf("connection %d: %v, want a timeout", i, err)
		}
	}
}
