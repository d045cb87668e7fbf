// Package etcdtest starts embedded etcd clusters on loopback for tests:
// real etcd servers (the same code as the etcd binary) with their data in
// t.TempDir(), on ports chosen at start.
package etcdtest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// startWait bounds how long Start waits for the members to elect a leader.
const startWait = 60 * time.Second

// Member is one etcd server of a Cluster, in this process or in a child
// process (StartProcesses).
type Member struct {
	Name      string
	ClientURL string // http://127.0.0.1:port
	PeerURL   string
	Dir       string
	etcd      *embed.Etcd
	proc      *process
	cfg       memberConfig
}

// Endpoint returns the member's client address as "127.0.0.1:port".
func (m *Member) Endpoint() string { return strings.TrimPrefix(m.ClientURL, "http://") }

// Running reports whether the member has not been stopped.
func (m *Member) Running() bool { return m.etcd != nil || m.proc != nil }

// Cluster is a set of embedded etcd members that form one cluster.
type Cluster struct {
	Members  []*Member
	t        testing.TB
	hostTest string // StartProcesses: the test that hosts a member
}

// Start starts an n-member cluster on 127.0.0.1, waits until it has a
// leader, and stops it when the test ends. Members log only when the
// environment has WHARF_ETCD_LOG=1.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	return StartQuota(t, n, 0)
}

// StartQuota is Start with each member's space quota set to quota bytes
// (etcd's --quota-backend-bytes; 0 is etcd's default): a write that would
// pass it is refused with "mvcc: database space exceeded".
func StartQuota(t testing.TB, n int, quota int64) *Cluster {
	t.Helper()
	var lastErr error
	for try := 0; try < 3; try++ { // a chosen port can be taken before etcd binds it
		c, err := start(t, n, quota)
		if err == nil {
			return c
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("etcdtest: start %d members: %v", n, lastErr)
	return nil
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// memberConfig is what a member needs to start; a child process gets it
// as JSON in the environment.
type memberConfig struct {
	Name, Dir, ClientURL, PeerURL, InitialCluster, Token string
	NoFsync                                              bool
	// QuotaBackendBytes is etcd's --quota-backend-bytes (0: etcd's default).
	QuotaBackendBytes int64
}

func (mc memberConfig) embedConfig() *embed.Config {
	logger := zap.NewNop()
	if os.Getenv("WHARF_ETCD_LOG") == "1" {
		logger, _ = zap.NewDevelopment()
	}
	cfg := embed.NewConfig()
	cfg.Name = mc.Name
	cfg.Dir = mc.Dir
	cu, _ := url.Parse(mc.ClientURL)
	pu, _ := url.Parse(mc.PeerURL)
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = mc.InitialCluster
	cfg.InitialClusterToken = mc.Token
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(logger)
	cfg.UnsafeNoFsync = mc.NoFsync
	cfg.QuotaBackendBytes = mc.QuotaBackendBytes
	return cfg
}

func layout(t testing.TB, n int) (*Cluster, []memberConfig, error) {
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, nil, err
	}
	root := t.TempDir()
	c := &Cluster{t: t}
	var initial []string
	for i := range n {
		m := &Member{
			Name:      fmt.Sprintf("m%d", i),
			ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
			PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
			Dir:       filepath.Join(root, fmt.Sprintf("m%d", i)),
		}
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"="+m.PeerURL)
	}
	var cfgs []memberConfig
	for _, m := range c.Members {
		cfgs = append(cfgs, memberConfig{
			Name: m.Name, Dir: m.Dir, ClientURL: m.ClientURL, PeerURL: m.PeerURL,
			InitialCluster: strings.Join(initial, ","),
			Token:          fmt.Sprintf("wharf-test-%d", ports[0]),
		})
	}
	return c, cfgs, nil
}

func start(t testing.TB, n int, quota int64) (*Cluster, error) {
	c, cfgs, err := layout(t, n)
	if err != nil {
		return nil, err
	}
	for i, m := range c.Members {
		cfgs[i].QuotaBackendBytes = quota
		// The data lives in a temp dir for one test and an in-process
		// member is only ever stopped cleanly: fsync buys nothing but time.
		cfgs[i].NoFsync = true
		e, err := embed.StartEtcd(cfgs[i].embedConfig())
		if err != nil {
			c.stopAll()
			return nil, fmt.Errorf("member %s: %w", m.Name, err)
		}
		m.etcd = e
	}
	t.Cleanup(c.stopAll)
	deadline := time.After(startWait)
	for _, m := range c.Members {
		select {
		case <-m.etcd.Server.ReadyNotify():
		case err := <-m.etcd.Err():
			c.stopAll()
			return nil, fmt.Errorf("member %s: %w", m.Name, err)
		case <-deadline:
			c.stopAll()
			return nil, fmt.Errorf("members not ready after %s", startWait)
		}
	}
	return c, nil
}

func (c *Cluster) stopAll() {
	for i := range c.Members {
		c.Stop(i)
	}
}

// Endpoints returns the client addresses of the running members.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.Members {
		if m.Running() {
			eps = append(eps, m.Endpoint())
		}
	}
	return eps
}

// URL returns the cluster's etcd:// URL with the given key prefix.
func (c *Cluster) URL(prefix string) string {
	return "etcd://" + strings.Join(c.Endpoints(), ",") + prefix
}

// Leader returns the index of the member that is the current leader, as the
// running members report it, waiting up to startWait for one to be elected.
func (c *Cluster) Leader() int {
	c.t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		c.t.Fatalf("etcdtest: client: %v", err)
	}
	defer cli.Close()
	deadline := time.Now().Add(startWait)
	for time.Now().Before(deadline) {
		ids := map[uint64]int{}
		var lead uint64
		for i, m := range c.Members {
			if !m.Running() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			st, err := cli.Status(ctx, m.Endpoint())
			cancel()
			if err != nil {
				continue
			}
			ids[st.Header.MemberId] = i
			if st.Leader != 0 {
				lead = st.Leader
			}
		}
		if i, ok := ids[lead]; ok && lead != 0 {
			return i
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("etcdtest: no leader among the running members after %s", startWait)
	return -1
}

// Stop stops member i. An in-process member shuts down cleanly (a leader
// hands its leadership over first); a child process is killed with SIGKILL,
// as a crash or a power loss would stop it.
func (c *Cluster) Stop(i int) {
	m := c.Members[i]
	if m.etcd != nil {
		m.etcd.Close()
		m.etcd = nil
	}
	if m.proc != nil {
		m.proc.kill()
		m.proc = nil
	}
}

// Client returns a raw etcd client on the running members, for tests that
// look at the keys directly; it is closed when the test ends.
func (c *Cluster) Client() *clientv3.Client {
	c.t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		c.t.Fatalf("etcdtest: client: %v", err)
	}
	c.t.Cleanup(func() { cli.Close() })
	return cli
}

// WaitHealthy waits until every running member serves a linearizable read.
func (c *Cluster) WaitHealthy() {
	c.t.Helper()
	for _, ep := range c.Endpoints() {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			c.t.Fatalf("etcdtest: client for %s: %v", ep, err)
		}
		deadline := time.Now().Add(startWait)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err = cli.Get(ctx, "health")
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				cli.Close()
				c.t.Fatalf("etcdtest: member %s not serving after %s: %v", ep, startWait, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		cli.Close()
	}
}
