package main

import (
	"strings"
	"testing"
)

func TestServeTrustedProxyFlag(t *testing.T) {
	code, _, stderr := runServer(t, t.TempDir(), "--addr", "127.0.0.1:0", "--trusted-proxy", "proxy.example")
	if code != 2 || !strings.Contains(stderr, `trusted proxy "proxy.example" is neither a CIDR range`) || !strings.Contains(stderr, "--trusted-proxy 10.0.0.0/8") {
		t.Fatalf("bad --trusted-proxy: exit %d\n%s", code, stderr)
	}
}

func TestTokenCreateExpires(t *testing.T) {
	home := t.TempDir()
	s := startServe(t, home)
	defer s.stop(t)
	admin := s.info.AdminToken
	code, out, stderr := runWharf(t, home, "token", "create", "--role", "ci", "--expires", "30d", "--server", s.info.URL, "--token", admin)
	if code != 0 || !strings.HasPrefix(out, "wharf_") || !strings.Contains(stderr, "it expires at") {
		t.Fatalf("token create --expires: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, _ = runWharf(t, home, "token", "list", "--server", s.info.URL, "--token", admin)
	if code != 0 || !strings.Contains(out, "expires 20") || !strings.Contains(out, "never expires") {
		t.Fatalf("token list: exit %d\n%s", code, out)
	}
	code, _, stderr = runWharf(t, home, "token", "create", "--role", "ci", "--expires", "soon", "--server", s.info.URL, "--token", admin)
	if code != 2 || !strings.Contains(stderr, `expiry "soon" is neither a number of days`) {
		t.Fatalf("token create --expires soon: exit %d\n%s", code, stderr)
	}
}
