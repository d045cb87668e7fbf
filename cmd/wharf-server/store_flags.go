package main

import (
	"time"

	"github.com/spf13/pflag"
)

// storeFlags choose the server's store (serverhome.StoreConfig): bbolt in
// the data directory (one server), or an etcd cluster shared by any number
// of replicas.
type storeFlags struct {
	URL         string
	DialTimeout time.Duration
	CACert      string
	Cert        string
	Key         string
}

func addStoreFlags(f *pflag.FlagSet, o *storeFlags) {
	f.StringVar(&o.URL, "store", "", "shared store for several replicas: etcd://host:2379,host2:2379[/prefix] (default: bbolt in --data)")
	f.DurationVar(&o.DialTimeout, "store-timeout", 5*time.Second, "how long to wait for the etcd cluster to answer at start")
	f.StringVar(&o.CACert, "etcd-cacert", "", "CA certificate (PEM) that signed the etcd servers' certificates; turns on TLS")
	f.StringVar(&o.Cert, "etcd-cert", "", "client certificate (PEM) for etcd client-certificate authentication")
	f.StringVar(&o.Key, "etcd-key", "", "private key (PEM) of --etcd-cert")
}
