// Package gitserve serves bare git repositories over git's smart HTTP
// protocol (git http-backend as CGI) on 127.0.0.1 for tests, over https
// with a certificate for 127.0.0.1 and localhost, and records the
// Authorization header of every request it receives.
package gitserve

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a running git server.
type Server struct {
	*httptest.Server
	// CA is the PEM certificate to trust (nil for plain http).
	CA []byte

	mu    sync.Mutex
	reqs  []Request
	check func(*http.Request) bool
}

// Request is what the server saw of one request.
type Request struct {
	Host, Path    string
	Authorization string
}

// Requests returns the requests seen so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Authorizations returns the non-empty Authorization headers seen so far.
func (s *Server) Authorizations() []string {
	var out []string
	for _, r := range s.Requests() {
		if r.Authorization != "" {
			out = append(out, r.Authorization)
		}
	}
	return out
}

// Options shape a server.
type Options struct {
	// HTTP serves plain http instead of https.
	HTTP bool
	// Allow decides whether a request is served; false answers 401 with
	// a Basic challenge. nil serves every request.
	Allow func(*http.Request) bool
	// Redirect, when set, answers every request with a 302 to
	// Redirect + the request's path and query instead of serving it.
	Redirect string
	// Addr is the address to listen on ("" is 127.0.0.1 on a free port);
	// the certificate is valid for its IP too.
	Addr string
}

// Start serves the bare repositories under root (root/owner/repo.git).
// It skips the test when git is not installed.
func Start(t testing.TB, root string, o Options) *Server {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	out, err := exec.Command(gitBin, "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	h := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
	}
	s := &Server{check: o.Allow}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, Request{Host: r.Host, Path: r.URL.Path, Authorization: r.Header.Get("Authorization")})
		s.mu.Unlock()
		if o.Redirect != "" {
			http.Redirect(w, r, o.Redirect+r.URL.RequestURI(), http.StatusFound)
			return
		}
		if s.check != nil && !s.check(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "auth required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	if o.Addr != "" {
		l, err := net.Listen("tcp", o.Addr)
		if err != nil {
			t.Fatal(err)
		}
		s.Listener.Close()
		s.Listener = l
	}
	if o.HTTP {
		s.Start()
	} else {
		var ips []net.IP
		if host, _, err := net.SplitHostPort(o.Addr); err == nil {
			ips = append(ips, net.ParseIP(host))
		}
		cert, ca := selfSigned(t, ips...)
		s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		s.StartTLS()
		s.CA = ca
	}
	t.Cleanup(s.Close)
	return s
}

// selfSigned makes a CA certificate valid for 127.0.0.1, ::1, localhost and
// the extra addresses.
func selfSigned(t testing.TB, extra ...net.IP) (tls.Certificate, []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "wharf test git server"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           append([]net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback}, extra...),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// Localhost is u with 127.0.0.1 replaced by localhost: the same server
// under another host name.
func Localhost(u string) string { return strings.Replace(u, "127.0.0.1", "localhost", 1) }
