package serverhome

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/etcdstore"
	"github.com/wharfhq/wharf/plugin"
)

// StoreConfig chooses the server's store: bbolt in the data directory
// (one server), or an etcd cluster shared by any number of replicas.
type StoreConfig struct {
	// URL is etcd://host:2379,host2:2379[/prefix]; "" is bbolt in the data
	// directory.
	URL string
	// DialTimeout is how long to wait for the etcd cluster at start.
	DialTimeout time.Duration
	// CACert, Cert and Key are PEM files for TLS to etcd.
	CACert string
	Cert   string
	Key    string
}

// openStore opens the store o names. where describes it for
// the log and the start-up line. Credentials for etcd's own authentication
// come from WHARF_ETCD_USERNAME and WHARF_ETCD_PASSWORD, never from flags
// (which other users can read in the process list).
func openStore(o StoreConfig, data string, lockTimeout time.Duration, getenv func(string) string) (st store.Store, where string, err error) {
	if o.URL == "" {
		if o.CACert != "" || o.Cert != "" || o.Key != "" {
			return nil, "", &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--etcd-cacert",
				Err: errors.New("the --etcd-* flags apply only to an etcd store"), Hint: "add --store etcd://host:2379 or drop the --etcd-* flags"}
		}
		path := BoltPath(data)
		b, err := store.OpenBolt(path, store.Options{LockTimeout: lockTimeout})
		if err != nil {
			var ce *store.CorruptError
			if errors.As(err, &ce) {
				// The store's own message names the client's repair.
				return nil, "", &plugin.Error{Layer: plugin.LayerMaterialization, Type: TypeStoreDamaged, Object: path,
					Err: fmt.Errorf("%s is damaged: %s (%w)", path, ce.Reason, store.ErrCorrupt), Hint: RepairHint(data)}
			}
			hint := "check that " + data + " is writable"
			if errors.Is(err, store.ErrLocked) {
				hint = "another wharf-server uses " + data + "; stop it or pass another --data (several replicas need --store etcd://...)"
			}
			return nil, "", &plugin.Error{Layer: plugin.LayerMaterialization, Type: "store-locked", Object: data, Err: err, Hint: hint}
		}
		return b, "bolt:" + path, nil
	}
	endpoints, prefix, err := etcdstore.ParseURL(o.URL)
	if err != nil {
		return nil, "", &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--store", Err: err,
			Hint: "e.g. --store etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379/wharf, or leave --store out for the embedded bbolt store in --data"}
	}
	if o.DialTimeout <= 0 {
		return nil, "", &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--store-timeout",
			Err: errors.New("--store-timeout must be positive"), Hint: "e.g. --store-timeout 5s"}
	}
	tlsCfg, err := etcdTLS(o)
	if err != nil {
		return nil, "", err
	}
	opts := etcdstore.Options{Prefix: prefix, DialTimeout: o.DialTimeout, TLS: tlsCfg,
		Username: getenv("WHARF_ETCD_USERNAME"), Password: getenv("WHARF_ETCD_PASSWORD")}
	e, err := etcdstore.Open(endpoints, opts)
	if err != nil {
		return nil, "", &plugin.Error{Layer: plugin.LayerMaterialization, Type: "store-unreachable", Object: o.URL, Err: err,
			Hint: fmt.Sprintf("check that etcd answers at %s (etcdctl --endpoints=%s endpoint health), or raise --store-timeout",
				strings.Join(endpoints, ","), strings.Join(endpoints, ","))}
	}
	return e, "etcd://" + strings.Join(endpoints, ",") + prefix, nil
}

// etcdTLS builds the client TLS configuration from the --etcd-* flags; nil
// when none is given.
func etcdTLS(o StoreConfig) (*tls.Config, error) {
	if o.CACert == "" && o.Cert == "" && o.Key == "" {
		return nil, nil
	}
	bad := func(flag, file string, err error, hint string) error {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: flag + " " + file, Err: err, Hint: hint}
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CACert != "" {
		pemBytes, err := os.ReadFile(o.CACert)
		if err != nil {
			return nil, bad("--etcd-cacert", o.CACert, err, "pass the CA certificate file (PEM) of the etcd cluster")
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemBytes) {
			return nil, bad("--etcd-cacert", o.CACert, errors.New("no PEM certificate in the file"), "pass the CA certificate file (PEM) of the etcd cluster")
		}
		cfg.RootCAs = pool
	}
	if (o.Cert == "") != (o.Key == "") {
		return nil, bad("--etcd-cert", o.Cert, errors.New("--etcd-cert and --etcd-key go together"), "pass both the client certificate and its key, or neither")
	}
	if o.Cert != "" {
		pair, err := tls.LoadX509KeyPair(o.Cert, o.Key)
		if err != nil {
			return nil, bad("--etcd-cert", o.Cert, err, "pass a PEM client certificate and the PEM key it was issued for")
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// OpenStore opens the store cfg names without starting a server: bbolt in
// data (refused with a clear error while a server holds its lock) or the
// etcd cluster. It returns where it is ("bolt:<path>" or "etcd://...").
// wharf-server's offline commands (admin token create) use it.
func OpenStore(cfg StoreConfig, data string, lockTimeout time.Duration, getenv func(string) string) (store.Store, string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	return openStore(cfg, data, lockTimeout, getenv)
}
