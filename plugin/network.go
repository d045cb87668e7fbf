package plugin

import (
	"strconv"
	"strings"
)

// maxNetworkHosts bounds plugin.json's network.hosts, as Claude Code reads
// it (the rest are ignored).
const maxNetworkHosts = 256

// Network is plugin.json's "network": the hosts the plugin says it
// reaches, in Claude Code's sandbox.network.allowedDomains syntax (a host,
// an optional leading "*.", an optional ":port"). An empty list says the
// plugin needs none; a nil *Network says nothing was declared.
type Network struct {
	Hosts []string `json:"hosts"`
}

// network decodes "network". Claude Code ignores a value of another shape
// and reads at most 256 hosts, so problems here are warnings.
func (d *decoder) network(n *node, f string) *Network {
	if n.kind != kindObject {
		d.warnf(n, f, "expected an object {\"hosts\": [...]}, got %s; Claude Code ignores it", n.kind)
		return nil
	}
	h := n.get("hosts")
	if h == nil || h.kind != kindArray {
		d.warnf(n, key(f, "hosts"), "expected an array of host names; Claude Code ignores network without it")
		return nil
	}
	out := &Network{Hosts: []string{}}
	for i, e := range h.elems {
		ef := index(key(f, "hosts"), i)
		if i >= maxNetworkHosts {
			d.warnf(e, ef, "more than %d hosts; Claude Code reads the first %d", maxNetworkHosts, maxNetworkHosts)
			break
		}
		if e.kind != kindString {
			d.warnf(e, ef, "expected a host name, got %s", e.kind)
			continue
		}
		if !ValidHost(e.str) {
			d.warnf(e, ef, "%q is not a host: write a name such as api.example.com, *.example.com or db.example.com:5432", e.str)
			continue
		}
		out.Hosts = append(out.Hosts, strings.ToLower(e.str))
	}
	return out
}

// ValidHost reports whether s is a host in allowedDomains syntax: DNS
// labels (letters, digits, '-', not at either end of a label), an optional
// leading "*." and an optional ":port" (1-65535).
func ValidHost(s string) bool {
	host, port, hasPort := strings.Cut(s, ":")
	if hasPort {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 || strconv.Itoa(p) != port {
			return false
		}
	}
	host = strings.TrimPrefix(host, "*.")
	if host == "" || len(host) > 253 {
		return false
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			if !isAlnum(label[i]) && label[i] != '-' {
				return false
			}
		}
	}
	return true
}
