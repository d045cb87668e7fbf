package etcdstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/etcdstore"
	"github.com/wharfhq/wharf/internal/testutil/etcdtest"
)

// A fault is how a member answers one transaction that writes.
type fault int

const (
	// appliedNoSpace: applied, answered "database space exceeded", as a
	// member does when the backend outgrew the quota before the apply.
	appliedNoSpace fault = iota
	// refusedNoSpace: not sent, answered "database space exceeded", as a
	// member already over its quota refuses a request.
	refusedNoSpace
	// appliedLost: applied, the answer lost (a timeout).
	appliedLost
	// lostBefore: not sent, answered with a timeout.
	lostBefore
)

// faultScript answers the transactions that write with its faults in
// order, and passes everything else (and what follows the script) on.
type faultScript struct {
	mu     sync.Mutex
	faults []fault
}

func (s *faultScript) next() (fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.faults) == 0 {
		return 0, false
	}
	f := s.faults[0]
	s.faults = s.faults[1:]
	return f, true
}

func (s *faultScript) left() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.faults)
}

func (s *faultScript) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if !writes(req) {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	f, ok := s.next()
	if !ok {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	switch f {
	case refusedNoSpace:
		return rpctypes.ErrGRPCNoSpace
	case lostBefore:
		return rpctypes.ErrGRPCTimeout
	}
	if err := invoker(ctx, method, req, reply, cc, opts...); err != nil {
		return err
	}
	if f == appliedLost {
		return rpctypes.ErrGRPCTimeout
	}
	return rpctypes.ErrGRPCNoSpace
}

// writes reports whether req is a transaction that puts a key: what the
// quota weighs (a read's cost is nothing).
func writes(req any) bool {
	txn, ok := req.(*pb.TxnRequest)
	if !ok {
		return false
	}
	for _, op := range txn.Success {
		if op.GetRequestPut() != nil {
			return true
		}
	}
	return false
}

// etcd's quota is checked twice: before a member proposes a request, and
// when it applies it. A transaction admitted below the quota that the
// backend outgrew before it applied is applied and still answered
// "database space exceeded". Update reports success for it (the marker
// shows it applied), store.ErrNoSpace ("not applied") for one that was
// not, and "may or may not have been applied" when an earlier try's answer
// was lost and nothing shows it applied yet.
func TestEtcdSpaceExceededAfterApplyIsSuccess(t *testing.T) {
	c := etcdtest.Start(t, 1)
	script := &faultScript{}
	s := openEtcd(t, c.Endpoints(), etcdstore.WithDialOptions(etcdstore.Options{Prefix: "/space"}, grpc.WithUnaryInterceptor(script.intercept)))
	stored := func(key string) bool {
		var v []byte
		err := s.View(func(r store.Reader) (err error) {
			v, err = r.Get("b", key)
			return err
		})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return string(v) == key
	}
	for _, c := range []struct {
		name    string
		faults  []fault
		stored  bool
		noSpace bool   // the error is store.ErrNoSpace
		msg     string // in the error; "" for success
	}{
		{"applied, then over the quota", []fault{appliedNoSpace}, true, false, ""},
		{"refused for space", []fault{refusedNoSpace}, false, true, "not applied"},
		{"applied, answer lost, the resend refused for space", []fault{appliedLost, refusedNoSpace}, true, false, ""},
		{"lost before it was sent, the resend refused for space", []fault{lostBefore, refusedNoSpace}, false, false, "may or may not have been applied"},
	} {
		script.mu.Lock()
		script.faults = c.faults
		script.mu.Unlock()
		key := strings.ReplaceAll(c.name, " ", "-")
		err := s.Update(func(tx store.Tx) error { return tx.Put("b", key, []byte(key)) })
		switch {
		case c.msg == "" && err != nil:
			t.Errorf("%s: %v, want success", c.name, err)
		case c.msg != "" && (err == nil || !strings.Contains(err.Error(), c.msg) || errors.Is(err, store.ErrNoSpace) != c.noSpace):
			t.Errorf("%s: %v, want an error saying %q (store.ErrNoSpace: %v)", c.name, err, c.msg, c.noSpace)
		}
		if got := stored(key); got != c.stored {
			t.Errorf("%s: stored %v, want %v", c.name, got, c.stored)
		}
		if n := script.left(); n != 0 {
			t.Errorf("%s: %d faults not used", c.name, n)
		}
	}
}
