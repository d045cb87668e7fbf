//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// memberSpec is what a member process needs; it gets it as JSON in
// memberEnv. The member listens on its own ports and advertises the
// proxies' (proxy.go), so every byte between members, and between the
// replicas and a member, passes a proxy the harness can cut.
type memberSpec struct {
	Name, Dir                     string
	ListenClient, AdvertiseClient string
	ListenPeer, AdvertisePeer     string
	InitialCluster, Token         string
}

const memberEnv = "WHARF_JEPSEN_MEMBER"

// serveMember runs one etcd member until killed or until stdin closes.
func serveMember(spec string) error {
	var ms memberSpec
	if err := json.Unmarshal([]byte(spec), &ms); err != nil {
		return fmt.Errorf("member spec: %w", err)
	}
	u := func(s string) []url.URL { v, _ := url.Parse("http://" + s); return []url.URL{*v} }
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = ms.Name, ms.Dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = u(ms.ListenClient), u(ms.AdvertiseClient)
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = u(ms.ListenPeer), u(ms.AdvertisePeer)
	cfg.InitialCluster, cfg.InitialClusterToken = ms.InitialCluster, ms.Token
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		return err
	case <-time.After(60 * time.Second):
		return fmt.Errorf("member %s not ready after 60s", ms.Name)
	}
	fmt.Println("member-ready")
	io.Copy(io.Discard, os.Stdin)
	e.Close()
	return nil
}

// member is one etcd member process and its proxies.
type member struct {
	spec   memberSpec
	cmd    *exec.Cmd
	stdin  io.Closer
	client *proxy // in front of its client port: the replicas use it
	peer   *proxy // in front of its peer port: the other members use it
	paused bool
}

type cluster struct {
	members []*member
	net     *netctl
	log     io.Writer
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func startCluster(dir string, n int, log io.Writer) (*cluster, error) {
	c := &cluster{net: newNetctl(), log: log}
	var initial []string
	for i := range n {
		m := &member{}
		var err error
		m.client, err = c.net.listen(i, false)
		if err != nil {
			return nil, err
		}
		m.peer, err = c.net.listen(i, true)
		if err != nil {
			return nil, err
		}
		lc, err := freePort()
		if err != nil {
			return nil, err
		}
		lp, err := freePort()
		if err != nil {
			return nil, err
		}
		m.client.target, m.peer.target = lc, lp
		m.spec = memberSpec{Name: fmt.Sprintf("m%d", i), Dir: filepath.Join(dir, fmt.Sprintf("m%d", i)),
			ListenClient: lc, AdvertiseClient: m.client.addr(), ListenPeer: lp, AdvertisePeer: m.peer.addr()}
		initial = append(initial, m.spec.Name+"=http://"+m.peer.addr())
		c.members = append(c.members, m)
	}
	for _, m := range c.members {
		m.spec.InitialCluster = strings.Join(initial, ",")
		m.spec.Token = "wharf-jepsen-" + filepath.Base(dir)
	}
	errc := make(chan error, n)
	for i := range c.members {
		go func() { errc <- c.spawn(i) }()
	}
	for range n {
		if err := <-errc; err != nil {
			c.stop()
			return nil, err
		}
	}
	// Map member IDs to indexes, for the proxies (X-Server-From).
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.directEndpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ml, err := cli.MemberList(ctx)
	if err != nil {
		return nil, err
	}
	for _, mm := range ml.Members {
		for i, m := range c.members {
			if m.spec.Name == mm.Name {
				c.net.setID(fmt.Sprintf("%x", mm.ID), i)
			}
		}
	}
	return c, nil
}

// spawn starts member i's process and waits until it serves.
func (c *cluster) spawn(i int) error {
	m := c.members[i]
	spec, _ := json.Marshal(m.spec)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), memberEnv+"="+string(spec))
	cmd.Stderr = c.log
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	m.cmd, m.stdin, m.paused = cmd, stdin, false
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		ok := false
		for sc.Scan() {
			if !ok && sc.Text() == "member-ready" {
				ok = true
				ready <- true
			}
		}
		if !ok {
			ready <- false
		}
		cmd.Wait()
	}()
	select {
	case ok := <-ready:
		if !ok {
			return fmt.Errorf("member %s exited before it served", m.spec.Name)
		}
	case <-time.After(90 * time.Second):
		return fmt.Errorf("member %s not serving after 90s", m.spec.Name)
	}
	return nil
}

func (c *cluster) directEndpoints() []string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.spec.ListenClient)
	}
	return eps
}

// url is the store URL the replicas use: every member through its proxy.
func (c *cluster) url(prefix string) string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.client.addr())
	}
	return "etcd://" + strings.Join(eps, ",") + prefix
}

// leader asks the members that run (directly, not through the proxies)
// which of them leads; -1 when none answers within a few seconds.
func (c *cluster) leader() int {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range c.members {
			if m.cmd == nil || m.paused {
				continue
			}
			cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.spec.ListenClient}, DialTimeout: time.Second, Logger: zap.NewNop()})
			if err != nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := cli.Status(ctx, m.spec.ListenClient)
			cancel()
			cli.Close()
			if err != nil || st.Leader == 0 {
				continue
			}
			if i, ok := c.net.index(fmt.Sprintf("%x", st.Leader)); ok {
				return i
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return -1
}

func (c *cluster) kill(i int) {
	m := c.members[i]
	if m.cmd != nil {
		m.cmd.Process.Kill()
		m.stdin.Close()
		m.cmd = nil
	}
}

func (c *cluster) signal(i int, sig syscall.Signal) {
	if m := c.members[i]; m.cmd != nil {
		m.cmd.Process.Signal(sig)
		m.paused = sig == syscall.SIGSTOP
	}
}

func (c *cluster) stop() {
	for i := range c.members {
		c.signal(i, syscall.SIGCONT)
		c.kill(i)
	}
	c.net.close()
}
