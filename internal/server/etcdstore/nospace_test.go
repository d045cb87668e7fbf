package etcdstore_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/etcdstore"
	"github.com/wharfhq/wharf/internal/testutil/etcdtest"
)

// spaceFault answers the next transaction as an etcd member over its
// space quota does: "database space exceeded", after the member applied
// it (applied) or without sending it (refused).
type spaceFault struct {
	applied, refused atomic.Bool
}

func (f *spaceFault) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if !writes(req) {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	if f.refused.CompareAndSwap(true, false) {
		return rpctypes.ErrGRPCNoSpace
	}
	if err := invoker(ctx, method, req, reply, cc, opts...); err != nil {
		return err
	}
	if f.applied.CompareAndSwap(true, false) {
		return rpctypes.ErrGRPCNoSpace
	}
	return nil
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
// shows it applied) and store.ErrNoSpace, "not applied", only for one that
// was not.
func TestEtcdSpaceExceededAfterApplyIsSuccess(t *testing.T) {
	c := etcdtest.Start(t, 1)
	f := &spaceFault{}
	s := openEtcd(t, c.Endpoints(), etcdstore.WithDialOptions(etcdstore.Options{Prefix: "/space"}, grpc.WithUnaryInterceptor(f.intercept)))
	put := func(key string) error {
		return s.Update(func(tx store.Tx) error { return tx.Put("b", key, []byte(key)) })
	}
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

	f.applied.Store(true)
	if err := put("applied"); err != nil {
		t.Fatalf("an update that applied, answered database space exceeded: %v", err)
	}
	if !stored("applied") {
		t.Fatal("the update reported done is not stored")
	}

	f.refused.Store(true)
	err := put("refused")
	if !errors.Is(err, store.ErrNoSpace) || !strings.Contains(err.Error(), "not applied") {
		t.Fatalf("an update refused for space: %v, want store.ErrNoSpace", err)
	}
	if stored("refused") {
		t.Fatal("the update reported refused is stored")
	}
	if f.applied.Load() || f.refused.Load() {
		t.Fatal("a fault was not used")
	}
}
