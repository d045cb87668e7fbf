package api

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/etcdtest"
)

// BenchmarkReplicasEtcdBundle304 polls the policy bundle with If-None-Match
// (the 304 path) through one replica and round-robin through three, over
// one embedded 3-member etcd cluster, in this process. bench/replicas.sh
// measures the same with separate processes and reports the ratio.
func BenchmarkReplicasEtcdBundle304(b *testing.B) {
	c := etcdtest.Start(b, 3)
	rs := startReplicas(b, c.Endpoints(), "/bench", 3)
	etag := ""
	for _, r := range rs {
		res, err := r.call("GET", "/v1/policy/bundle", replicaAdminSecret, nil)
		if err != nil || res.status != http.StatusOK {
			b.Fatalf("%s: bundle: %v %d", r.name, err, res.status)
		}
		if etag != "" && res.header.Get("ETag") != etag {
			b.Fatalf("%s: ETag %s, want %s", r.name, res.header.Get("ETag"), etag)
		}
		etag = res.header.Get("ETag")
	}
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxIdleConns: 256}}
			var next atomic.Uint64
			var failed atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r := rs[next.Add(1)%uint64(n)]
					req, _ := http.NewRequest("GET", r.url+"/v1/policy/bundle", nil)
					req.Header.Set("Authorization", "Bearer "+replicaAdminSecret)
					req.Header.Set("If-None-Match", etag)
					res, err := client.Do(req)
					if err != nil {
						failed.Add(1)
						continue
					}
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode != http.StatusNotModified {
						failed.Add(1)
					}
				}
			})
			if f := failed.Load(); f > 0 {
				b.Fatalf("%d requests did not get 304", f)
			}
		})
	}
}
