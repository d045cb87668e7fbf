package fetch

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"testing"
)

// The guarded transport dials only checked addresses, whatever asked it
// to connect (a custom client's transport included).
func TestGuardedDialRefusesPrivate(t *testing.T) {
	t.Setenv(AllowPrivateEnv, "")
	c := &Config{Client: &http.Client{Transport: &http.Transport{}}}
	hc := c.client(c.Guard())
	tr := hc.Transport.(*http.Transport)
	for _, addr := range []string{"127.0.0.1:80", "[::1]:443", "169.254.169.254:80", "localhost:80", "10.0.0.1:443"} {
		if _, err := tr.DialContext(context.Background(), "tcp", addr); !errors.Is(err, ErrPrivateAddress) {
			t.Errorf("dial %s: %v, want %v", addr, err, ErrPrivateAddress)
		}
	}
}

func TestPrivateKind(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1": "loopback", "127.9.9.9": "loopback", "::1": "loopback", "::ffff:127.0.0.1": "loopback",
		"10.0.0.1": "private", "172.16.5.4": "private", "192.168.0.1": "private", "fd00::1": "private",
		"169.254.169.254": "link-local", "fe80::1": "link-local", "0.0.0.0": "unspecified", "::": "unspecified",
		"100.64.0.1": "private", "0.1.2.3": "private", "239.1.2.3": "multicast",
		"8.8.8.8": "", "140.82.112.3": "", "2606:4700::1111": "",
	} {
		if got := PrivateKind(netip.MustParseAddr(addr)); got != want {
			t.Errorf("%s: %q, want %q", addr, got, want)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST": true, "api.localhost": true, "127.0.0.1": true, "127.1.2.3": true,
		"::1": true, "[::1]": true, "::ffff:127.0.0.1": true,
		"localhost.evil.example": false, "10.0.0.1": false, "example.com": false, "": false, "0.0.0.0": false,
	} {
		if got := IsLoopback(host); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", host, got, want)
		}
	}
}
