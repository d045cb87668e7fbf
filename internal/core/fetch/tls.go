package fetch

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
)

// withRoots makes t trust the system roots plus the PEM bundle.
func withRoots(t *http.Transport, bundle []byte) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	pool.AppendCertsFromPEM(bundle)
	if t.TLSClientConfig == nil {
		t.TLSClientConfig = &tls.Config{}
	} else {
		t.TLSClientConfig = t.TLSClientConfig.Clone()
	}
	t.TLSClientConfig.RootCAs = pool
}
