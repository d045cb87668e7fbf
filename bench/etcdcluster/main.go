// Command etcdcluster runs an n-member etcd cluster on 127.0.0.1 (the etcd
// server code, embedded) for benchmarks where no etcd binary is installed.
// It prints the cluster's etcd:// URL on stdout once every member serves,
// and runs until it gets SIGINT or SIGTERM; the
// data lives in -dir (a new temporary directory by default, removed at exit).
//
//	etcdcluster -n 3 -prefix /wharf
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "etcdcluster:", err)
		os.Exit(1)
	}
}

func run() error {
	n := flag.Int("n", 3, "members")
	prefix := flag.String("prefix", "/wharf", "key prefix put in the printed URL")
	dir := flag.String("dir", "", "data directory (default: a temporary one, removed at exit)")
	fsync := flag.Bool("fsync", true, "fsync the WAL like a production member")
	compact := flag.Duration("auto-compact", 0, "keep this much history, compacting periodically like a production member's --auto-compaction-retention (0: never; the benchmark compacts)")
	quota := flag.Int64("quota", 0, "backend quota in bytes, like --quota-backend-bytes (0: etcd's default of 2 GiB)")
	flag.Parse()
	if *n < 1 || *n > 7 {
		return errors.New("-n must be between 1 and 7")
	}
	root := *dir
	if root == "" {
		d, err := os.MkdirTemp("", "wharf-etcd-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		root = d
	}
	ports, err := freePorts(2 * *n)
	if err != nil {
		return err
	}
	var initial, clients []string
	for i := range *n {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, ports[2*i+1]))
		clients = append(clients, fmt.Sprintf("127.0.0.1:%d", ports[2*i]))
	}
	var members []*embed.Etcd
	defer func() {
		for _, m := range members {
			m.Close()
		}
	}()
	for i := range *n {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = filepath.Join(root, cfg.Name)
		cu, _ := url.Parse("http://" + clients[i])
		pu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]))
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = fmt.Sprintf("wharf-bench-%d", ports[0])
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		cfg.UnsafeNoFsync = !*fsync
		if *compact > 0 {
			cfg.AutoCompactionMode, cfg.AutoCompactionRetention = "periodic", compact.String()
		}
		cfg.QuotaBackendBytes = *quota
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			return fmt.Errorf("member %s: %w", cfg.Name, err)
		}
		members = append(members, e)
	}
	for _, m := range members {
		select {
		case <-m.Server.ReadyNotify():
		case err := <-m.Err():
			return err
		case <-time.After(60 * time.Second):
			return errors.New("members not ready after 60s")
		}
	}
	fmt.Printf("etcd://%s%s\n", strings.Join(clients, ","), *prefix)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	return nil
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
