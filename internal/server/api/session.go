package api

import (
	"net"
	"net/http"
	"strings"

	"github.com/wharfhq/wharf/internal/server/sessions"
)

// The console's sessions are kept in the store (package sessions).

// SessionLifetime is how long a console session lasts from sign-in (less
// when its token expires sooner).
const SessionLifetime = sessions.Lifetime

// overTLS reports whether the browser reached the server over TLS: the
// connection is TLS, the server's public URL is https, or a configured
// trusted proxy (the connection's peer) says so in X-Forwarded-Proto. The
// header from anyone else is ignored.
func (s *Server) overTLS(r *http.Request) bool {
	if r.TLS != nil || strings.HasPrefix(strings.ToLower(s.deps.PublicURL), "https://") {
		return true
	}
	if len(s.deps.TrustedProxies) == 0 {
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	trusted := false
	for _, n := range s.deps.TrustedProxies {
		if n.Contains(ip) {
			trusted = true
			break
		}
	}
	if !trusted {
		return false
	}
	// The proxy that terminated TLS appends its value last.
	vals := strings.Split(strings.Join(r.Header.Values("X-Forwarded-Proto"), ","), ",")
	return strings.EqualFold(strings.TrimSpace(vals[len(vals)-1]), "https")
}
