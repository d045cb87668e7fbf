package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testutil/etcdtest"
)

// A port that is taken fails the start before anything is created: no
// admin token is made or printed, the exit is non-zero and the error
// names the address; the next start on a free port makes and prints the
// first admin token.
func TestServePortTakenCreatesNoToken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	home := t.TempDir()
	code, out, errOut := runServerFor(t, home, "--addr", ln.Addr().String(), "--demo", "")
	if code == 0 || !strings.Contains(errOut, ln.Addr().String()) || !strings.Contains(errOut, "--addr") {
		t.Fatalf("port taken: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if strings.Contains(out+errOut, "wharf_") || strings.Contains(errOut, "admin token") {
		t.Fatalf("a start that could not listen printed a token:\n%s%s", out, errOut)
	}
	if _, err := os.Stat(filepath.Join(home, "server", "server.db")); !os.IsNotExist(err) {
		t.Fatalf("a start that could not listen created the store: %v", err)
	}
	s := launch(t, home, []string{"--demo", ""}, nil)
	if s.info.AdminToken == "" || !s.stderrHas(s.info.AdminToken) {
		t.Fatalf("the first start that listens must create and show the admin token: %+v\n%s", s.info, s.stderr)
	}
	if code, _ := httpGet(t, s.info.URL+"/v1/tokens", s.info.AdminToken); code != 200 {
		t.Fatalf("first admin token: %d", code)
	}
	s.stop(t)
}

// adminCreate runs wharf-server admin token create and returns the secret
// it printed.
func adminCreate(t *testing.T, home string, args ...string) string {
	t.Helper()
	code, out, errOut := runServerFor(t, home, append([]string{"admin", "token", "create"}, args...)...)
	secret := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(secret, "wharf_") || strings.Contains(secret, "\n") || !strings.Contains(errOut, "shown only now") {
		t.Fatalf("admin token create %v: exit %d\nstdout %s\nstderr %s", args, code, out, errOut)
	}
	return secret
}

// A lost admin token is recovered beside the bbolt store while no server
// holds it: the new token works once the server starts; while a server
// runs, the command says so and changes nothing.
func TestAdminTokenCreateBolt(t *testing.T) {
	home := t.TempDir()
	s := launch(t, home, []string{"--demo", ""}, nil)
	first := s.info.AdminToken
	code, out, errOut := runServerEnv(t, home, []string{"WHARF_LOCK_TIMEOUT=200ms"}, "admin", "token", "create")
	if code == 0 || strings.Contains(out, "wharf_") || !strings.Contains(errOut, "another wharf-server uses") {
		t.Fatalf("admin token create beside a running server: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	s.stop(t)

	secret := adminCreate(t, home, "--note", "recovered")
	if code, _, errOut := runServerFor(t, home, "admin", "token", "create", "--role", "owner"); code != 2 || !strings.Contains(errOut, "--role") {
		t.Fatalf("a bad role: exit %d %s", code, errOut)
	}
	s = launch(t, home, []string{"--demo", ""}, nil)
	if s.info.AdminToken != "" {
		t.Fatalf("a restart made another admin token: %+v", s.info)
	}
	code, body := httpGet(t, s.info.URL+"/v1/tokens", secret)
	if code != 200 || !strings.Contains(body, `"note":"recovered"`) || !strings.Contains(body, `"createdBy":"wharf-server admin"`) {
		t.Fatalf("the recovered token: %d %s", code, body)
	}
	if code, _ := httpGet(t, s.info.URL+"/v1/tokens", first); code != 200 {
		t.Fatalf("the first admin token stopped working: %d", code)
	}
	code, body = httpGet(t, s.info.URL+"/v1/audit", secret)
	if code != 200 || !strings.Contains(body, "wharf-server admin") {
		t.Fatalf("the recovery is not in the audit log: %d %s", code, body)
	}
	s.stop(t)
}

// Over etcd the servers keep running: the token made beside the cluster
// works on the running server at once.
func TestAdminTokenCreateEtcd(t *testing.T) {
	c := etcdtest.Start(t, 1)
	url := c.URL("/recover")
	s := startServeArgs(t, t.TempDir(), "--store", url, "--demo", "")
	if s.info.AdminToken == "" {
		t.Fatalf("first start over etcd: %+v\n%s", s.info, s.stderr)
	}
	secret := adminCreate(t, t.TempDir(), "--store", url, "--role", "admin")
	if code, body := httpGet(t, s.info.URL+"/v1/tokens", secret); code != 200 || strings.Count(body, `"role":"admin"`) != 2 {
		t.Fatalf("the token made in etcd on the running server: %d %s", code, body)
	}
	dev := adminCreate(t, t.TempDir(), "--store", url, "--role", "developer")
	if code, _ := httpGet(t, s.info.URL+"/v1/tokens", dev); code != 403 {
		t.Fatalf("a developer token made in etcd on an admin route: %d", code)
	}
	s.stop(t)
}

// writeCert makes a CA and a certificate for 127.0.0.1 signed by it, and
// returns the files: ca.pem, cert.pem, key.pem.
func writeCert(t *testing.T) (caFile, certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "wharf test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("cert.pem", "CERTIFICATE", der), write("key.pem", "PRIVATE KEY", keyDER)
}

// The server serves HTTPS itself with --tls-cert and --tls-key; the client
// trusts it through SSL_CERT_FILE, and refuses it without; a loopback
// address draws no plain-HTTP warning.
func TestServeTLS(t *testing.T) {
	caFile, certFile, keyFile := writeCert(t)
	s := launch(t, t.TempDir(), []string{"--demo", "", "--tls-cert", certFile, "--tls-key", keyFile}, nil)
	if !strings.HasPrefix(s.info.URL, "https://127.0.0.1:") {
		t.Fatalf("served at %s, want https", s.info.URL)
	}
	admin := s.info.AdminToken
	home := t.TempDir()
	wharf := func(env []string, args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(clientBinary(t), args...)
		cmd.Env = append(os.Environ(), append([]string{"WHARF_HOME=" + home, "WHARF_TOKEN=", "WHARF_SERVER="}, env...)...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errb.String()
	}
	args := []string{"token", "create", "--role", "developer", "--group", "data-team", "--label", "os=linux", "--server", s.info.URL, "--token", admin, "--json"}
	code, out, errOut := wharf([]string{"SSL_CERT_FILE=" + caFile}, args...)
	var created struct {
		Token  string   `json:"token"`
		Groups []string `json:"groups"`
		Labels []string `json:"labels"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &created) != nil || created.Token == "" ||
		strings.Join(created.Groups, ",") != "data-team" || strings.Join(created.Labels, ",") != "os=linux" {
		t.Fatalf("wharf token create over HTTPS with the CA: exit %d\n%s\n%s", code, out, errOut)
	}
	other := t.TempDir()
	code, out, errOut = wharf([]string{"SSL_CERT_FILE=" + filepath.Join(other, "none.pem"), "SSL_CERT_DIR=" + other}, args...)
	if code == 0 || !strings.Contains(errOut, "certificate") {
		t.Fatalf("wharf trusted a certificate it has no CA for: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = wharf([]string{"SSL_CERT_FILE=" + caFile}, "token", "create", "--role", "developer", "--group", "data team", "--server", s.info.URL, "--token", admin)
	if code == 0 || !strings.Contains(errOut, "groups[0]") {
		t.Fatalf("a group with a space: exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(s.stderr.String(), "plain HTTP") {
		t.Fatalf("a loopback HTTPS server warned about plain HTTP:\n%s", s.stderr)
	}
	s.stop(t)

	code, _, errOut = runServerFor(t, t.TempDir(), "--addr", "127.0.0.1:0", "--tls-cert", certFile)
	if code != 2 || !strings.Contains(errOut, "--tls-key") {
		t.Fatalf("--tls-cert alone: exit %d %s", code, errOut)
	}
	code, _, errOut = runServerFor(t, t.TempDir(), "--addr", "127.0.0.1:0", "--tls-cert", keyFile, "--tls-key", keyFile)
	if code != 2 || !strings.Contains(errOut, keyFile) {
		t.Fatalf("a key as the certificate: exit %d %s", code, errOut)
	}
}

// Plain HTTP on every address warns once, on stderr; on 127.0.0.1 it does
// not. The server that listens on 0.0.0.0 runs in a network namespace of
// its own (unshare -rn), where that is the loopback interface only.
func TestServePlainHTTPWarning(t *testing.T) {
	s := launch(t, t.TempDir(), []string{"--demo", ""}, nil)
	s.stop(t)
	if strings.Contains(s.stderr.String(), "plain HTTP") {
		t.Fatalf("127.0.0.1 drew the plain-HTTP warning:\n%s", s.stderr)
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil || exec.Command(unshare, "-rn", "true").Run() != nil {
		t.Skip("unshare -rn is not available: cannot listen on 0.0.0.0 without reaching the network")
	}
	cmd := exec.Command(unshare, "-rn", serverBinary(t), "--json", "--addr", "0.0.0.0:0", "--demo", "", "--log-level", "warn")
	cmd.Env = append(os.Environ(), "WHARF_HOME="+t.TempDir(), "WHARF_BOOTSTRAP_TOKEN=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errb := &lockedBuffer{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var info serveInfo
	if err := json.NewDecoder(bufio.NewReader(stdout)).Decode(&info); err != nil {
		t.Fatalf("wharf-server on 0.0.0.0 did not start: %v\n%s", err, errb)
	}
	w := &servedWharf{cmd: cmd, info: info, stderr: errb}
	if !w.stderrHas("(--addr 0.0.0.0:0), which is not a loopback address") || !w.stderrHas("--tls-cert") {
		t.Fatalf("0.0.0.0 without TLS: no warning\n%s", errb)
	}
	if n := strings.Count(errb.String(), "plain HTTP"); n != 1 {
		t.Fatalf("the warning appears %d times, want once:\n%s", n, errb)
	}
}
