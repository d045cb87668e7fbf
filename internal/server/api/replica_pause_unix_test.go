//go:build unix

package api

import (
	"net/http"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/etcdtest"
)

// Each etcd member in turn (a process) is paused with SIGSTOP: it keeps its
// connections open and answers nothing, so whatever sits on it (a replica's
// requests, its watch) hears nothing. While it is paused, a token is
// created and deleted through one replica, and the other replica, whose
// watch may sit on the paused member, must refuse the deleted token before
// the member resumes. (Before, a replica whose watch sat on a stopped
// member served its cache as fresh for as long as the member was stopped.)
func TestReplicasRefuseDeletedTokenWhileAMemberIsPaused(t *testing.T) {
	c := etcdtest.StartProcesses(t, 3, "TestEtcdMemberProcess")
	rs := startReplicas(t, c.Endpoints(), "/pause", 2)
	writer, reader := rs[0], rs[1]
	accepted := func(secret string) bool {
		return reader.must("GET", "/v1/policy", secret, nil).status == http.StatusOK
	}
	for victim := range c.Members {
		c.Pause(victim)
		id, secret := writer.createToken(RoleDeveloper)
		waitFor(t, settle, "new token accepted by "+reader.name, func() bool { return accepted(secret) })
		if res := writer.must("DELETE", "/v1/tokens/"+id, replicaAdminSecret, nil); res.status/100 != 2 {
			t.Fatalf("%s paused: delete token: %d %s", c.Members[victim].Name, res.status, res.body)
		}
		waitFor(t, settle, "deleted token refused by "+reader.name+" while "+c.Members[victim].Name+" is paused", func() bool { return !accepted(secret) })
		c.Resume(victim)
		c.WaitHealthy()
	}
}
