package etcdstore_test

import (
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/etcdstore"
	"github.com/wharfhq/wharf/internal/testutil/etcdtest"
)

// answerDropper is a TCP proxy in front of one etcd member that passes
// requests on but, once muted, holds every answer: the member applies what
// it gets, and the client never hears of it, as when a member stops right
// after a commit.
type answerDropper struct {
	ln     net.Listener
	target string
	muted  atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newAnswerDropper(t *testing.T, target string) *answerDropper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &answerDropper{ln: ln, target: target}
	t.Cleanup(func() {
		ln.Close()
		d.mu.Lock()
		for _, c := range d.conns {
			c.Close()
		}
		d.mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			d.mu.Lock()
			d.conns = append(d.conns, c, up)
			d.mu.Unlock()
			go copyUntil(up, c, nil)
			go copyUntil(c, up, &d.muted)
		}
	}()
	return d
}

// copyUntil copies src to dst; while muted is set, what it reads is
// dropped and nothing more is written.
func copyUntil(dst, src net.Conn, muted *atomic.Bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if muted != nil && muted.Load() {
			return // hold the connection open, answer nothing
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestEtcdCommitWhoseAnswerIsLostAppliesOnce: the answers of one member
// are dropped while updates run that increment a counter and append to a
// log. Commits sent to that member apply there, and the client, hearing
// nothing, sends them again to another member: each must apply exactly
// once — the counter equals the number of acknowledged updates and the
// log has exactly one entry per update — and none may fail for it.
func TestEtcdCommitWhoseAnswerIsLostAppliesOnce(t *testing.T) {
	c := etcdtest.Start(t, 3)
	const workers, each = 6, 3
	// Whether a commit is sent to the muted member before a read that
	// timed out there takes it out of rotation is up to timing: rounds
	// go on, each with a fresh client, until some commit lost its answer.
	var ambiguous uint64
	updates := 0
	for round := 0; round < 10 && ambiguous == 0; round++ {
		drop := newAnswerDropper(t, c.Members[0].Endpoint())
		eps := []string{drop.ln.Addr().String(), c.Members[1].Endpoint(), c.Members[2].Endpoint()}
		s, err := etcdstore.Open(eps, etcdstore.Options{Prefix: "/lost"})
		if err != nil {
			t.Fatal(err)
		}
		drop.muted.Store(true)
		var wg sync.WaitGroup
		errs := make(chan error, workers*each)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					if err := s.Update(incrementAndLog); err != nil {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("update failed although two members answered: %v", err)
		}
		updates += workers * each
		ambiguous += s.Stats().Ambiguous
		t.Logf("round %d: stats %+v", round, s.Stats())
		s.Close()
	}
	if ambiguous == 0 {
		t.Fatal("no commit lost its answer in 10 rounds: the test did not exercise the resend")
	}
	r := openEtcd(t, c.Endpoints(), etcdstore.Options{Prefix: "/lost"})
	var n []byte
	var log []store.KV
	if err := r.View(func(r store.Reader) (err error) {
		if n, err = r.Get("counter", "n"); err != nil {
			return err
		}
		log, err = r.List("log", "")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if string(n) != strconv.Itoa(updates) || len(log) != updates {
		t.Fatalf("counter %s and %d log entries after %d acknowledged updates: a resent commit applied twice or not at all", n, len(log), updates)
	}
}

// incrementAndLog adds one to counter/n and appends an entry to log.
func incrementAndLog(tx store.Tx) error {
	n := 0
	raw, err := tx.Get("counter", "n")
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return err
	default:
		if n, err = strconv.Atoi(string(raw)); err != nil {
			return err
		}
	}
	seq, err := tx.NextSequence("log")
	if err != nil {
		return err
	}
	if err := tx.Put("log", strconv.FormatUint(seq, 10), []byte("x")); err != nil {
		return err
	}
	return tx.Put("counter", "n", []byte(strconv.Itoa(n+1)))
}
