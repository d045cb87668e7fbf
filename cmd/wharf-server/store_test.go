package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testutil/etcdtest"
)

// startServeArgs runs wharf-server with extra flags on a free loopback
// port and waits for its start-up line.
func startServeArgs(t *testing.T, home string, args ...string) *servedWharf {
	t.Helper()
	return launch(t, home, args, nil)
}

func httpDo(t *testing.T, method, url, token string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

// Two wharf-server processes over one etcd cluster are two replicas of one
// server: the first start creates the admin token once, both sign bundles
// with one key and give the same ETag, and a token made through one and
// revoked through the other stops working on both.
func TestServeReplicasOverEtcd(t *testing.T) {
	c := etcdtest.Start(t, 3)
	url := c.URL("/serve-test")
	demo, err := filepath.Abs(filepath.Join("..", "..", "testdata", "demo-marketplace"))
	if err != nil {
		t.Fatal(err)
	}
	a := startServeArgs(t, t.TempDir(), "--store", url, "--demo", demo)
	if a.info.AdminToken == "" || a.info.Store != "etcd://"+strings.Join(c.Endpoints(), ",")+"/serve-test" {
		t.Fatalf("first replica: want a new admin token and the etcd store: %+v\n%s", a.info, a.stderr)
	}
	b := startServeArgs(t, t.TempDir(), "--store", url, "--demo", demo)
	if b.info.AdminToken != "" || strings.Contains(b.stderr.String(), "wharf_") {
		t.Fatalf("second replica must not create or show an admin token: %+v\n%s", b.info, b.stderr)
	}
	if a.info.BundleKeyID != b.info.BundleKeyID {
		t.Fatalf("replicas sign with different keys: %s vs %s", a.info.BundleKeyID, b.info.BundleKeyID)
	}
	admin := a.info.AdminToken

	code, out, errOut := runWharf(t, t.TempDir(), "token", "create", "--role", "agent", "--server", a.info.URL, "--token", admin, "--json")
	var created struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &created) != nil || created.Token == "" {
		t.Fatalf("token create on the first replica: %d %s %s", code, out, errOut)
	}
	codeA, hA, _ := httpDo(t, "GET", a.info.URL+"/v1/policy/bundle", created.Token)
	codeB, hB, _ := httpDo(t, "GET", b.info.URL+"/v1/policy/bundle", created.Token)
	if codeA != 200 || codeB != 200 || hA.Get("ETag") == "" || hA.Get("ETag") != hB.Get("ETag") {
		t.Fatalf("bundle on both replicas: %d %q, %d %q", codeA, hA.Get("ETag"), codeB, hB.Get("ETag"))
	}
	if code, _, body := httpDo(t, "DELETE", b.info.URL+"/v1/tokens/"+created.ID, admin); code != 204 {
		t.Fatalf("revoke on the second replica: %d %s", code, body)
	}
	for _, s := range []*servedWharf{b, a} {
		deadline := time.Now().Add(time.Second)
		for {
			code, _, _ := httpDo(t, "GET", s.info.URL+"/v1/policy/bundle", created.Token)
			if code == 401 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("revoked token still accepted by %s after a second: %d", s.info.URL, code)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	a.stop(t)
	b.stop(t)
}

// An etcd store that does not answer fails the start with the address and
// what to check, within --store-timeout; a malformed URL is a usage error.
func TestServeEtcdStoreErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close() // nothing listens there now

	tests := []struct {
		name     string
		args     []string
		exit     int
		contains []string
	}{
		{"unreachable", []string{"--store", "etcd://" + dead + "/x", "--store-timeout", "1s"}, 1,
			[]string{dead, "etcdctl --endpoints=" + dead + " endpoint health", "--store-timeout"}},
		{"no host", []string{"--store", "etcd:///wharf"}, 2, []string{"--store", "no host", "etcd://10.0.0.1:2379"}},
		{"not etcd", []string{"--store", "bolt:/var/lib/wharf/server.db"}, 2, []string{"must start with etcd://", "leave --store out"}},
		{"bad port", []string{"--store", "etcd://127.0.0.1:99999"}, 2, []string{"port", "99999"}},
		{"tls flags without etcd", []string{"--etcd-cacert", "/nonexistent/ca.pem"}, 2, []string{"--etcd-", "--store etcd://"}},
		{"missing CA file", []string{"--store", "etcd://" + dead, "--etcd-cacert", "/nonexistent/ca.pem"}, 2, []string{"/nonexistent/ca.pem"}},
		{"cert without key", []string{"--store", "etcd://" + dead, "--etcd-cert", "/nonexistent/c.pem"}, 2, []string{"--etcd-key"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			code, out, errOut := runServer(t, t.TempDir(), append([]string{"--addr", "127.0.0.1:0", "--demo", ""}, tc.args...)...)
			if code != tc.exit {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.exit, out, errOut)
			}
			for _, want := range tc.contains {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr does not mention %q:\n%s", want, errOut)
				}
			}
			if strings.Contains(out, "serving on") {
				t.Fatalf("it served anyway: %s", out)
			}
			t.Logf("failed after %s", time.Since(start).Round(10*time.Millisecond))
		})
	}
}
