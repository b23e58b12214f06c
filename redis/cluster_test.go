package redis

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kcache/kcache"
	goredis "github.com/redis/go-redis/v9"
)

// clusterPort returns a free loopback port whose cluster bus port (the
// port plus 10000) is free too.
func clusterPort(t *testing.T) int {
	t.Helper()
	for range 100 {
		p := freePort(t)
		if p+10000 > 65535 {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000))
		if err != nil {
			continue
		}
		l.Close()
		return p
	}
	t.Fatal("no free pair of ports for a Cluster node")
	return 0
}

// startCluster starts a Redis Cluster of three masters, each with one
// replica, on loopback, and returns its nodes' servers: masters first.
func startCluster(t *testing.T) []*redisServer {
	t.Helper()
	cli := needTool(t, "redis-cli")
	var nodes []*redisServer
	var addrs []string
	for range 6 {
		s := &redisServer{t: t, port: clusterPort(t), dir: t.TempDir(),
			args: []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000"}}
		s.start()
		t.Cleanup(s.stop)
		nodes = append(nodes, s)
		addrs = append(addrs, s.addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, n := range nodes {
		waitClusterOK(t, n.client())
	}
	return nodes
}

// waitSynced waits, bounded, until the replica c follows its master: a
// manual failover needs a replica in step.
func waitSynced(t *testing.T, c *goredis.Client) {
	t.Helper()
	for range 300 {
		info, _ := c.Info(bg, "replication").Result()
		if strings.Contains(info, "master_link_status:up") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("replica never in sync")
}

// waitClusterOK waits, bounded, until c's node sees the whole Cluster up.
func waitClusterOK(t *testing.T, c *goredis.Client) {
	t.Helper()
	for range 300 {
		info, _ := c.ClusterInfo(bg).Result()
		if strings.Contains(info, "cluster_state:ok") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("cluster not ready")
}

// TestCluster: a node on a three-master Cluster builds through a manual
// failover; every build succeeds, and another node then finds the
// entries written before and after it.
func TestCluster(t *testing.T) {
	nodes := startCluster(t)
	url := "redis://" + nodes[0].addr() + "," + nodes[1].addr() + "," + nodes[2].addr()
	b := &builder{size: 20 << 10}
	// A loaded machine running a Cluster of six answers more slowly than
	// one server; the test is of correctness, not of speed.
	opts := Options{Timeout: time.Second}
	a := newNode(t, url, "", opts)
	const first = 20 // keys built before the failover
	b.delay = 5 * time.Millisecond
	build := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := a.cache.GetOrBuild(bg, testKey(i), b.build(testKey(i))); err != nil {
				t.Fatalf("key %d: %v", i, err)
			}
		}
	}
	build(0, first)
	flush(t, a)

	// Fail over: a replica takes over its master's slots while the node
	// goes on building.
	replica := findReplica(t, nodes)
	waitSynced(t, replica)
	done := make(chan error, 1)
	go func() { done <- replica.Do(context.Background(), "CLUSTER", "FAILOVER").Err() }()
	// Keys go on being built while the failover runs, and for a while
	// after it.
	keys := first
	for after := 0; after < 10 && keys < 400; keys++ {
		build(keys, keys+1)
		if isRole(replica, "master") {
			after++
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("CLUSTER FAILOVER: %v", err)
	}
	waitRole(t, replica, "master")
	flush(t, a)
	t.Logf("%d keys built around the failover", keys-first)

	// Another node finds what was written. Writes that met the failover
	// may be lost (they are dropped, not retried), so the test asks that
	// every key be served, and nearly all of them from the Cluster.
	c := newNode(t, url, "", opts)
	rb := &builder{size: 20 << 10}
	hits := 0
	for i := range keys {
		r, err := c.cache.GetOrBuild(bg, testKey(i), rb.build(testKey(i)))
		if err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
		if r.Outcome == kcache.OutcomeRemote {
			hits++
		}
	}
	t.Logf("%d of %d keys from the Cluster", hits, keys)
	if hits < keys-5 {
		t.Errorf("%d of %d keys from the Cluster after a failover", hits, keys)
	}
	if b.runs.Load() != int64(keys) {
		t.Errorf("%d builds for %d keys", b.runs.Load(), keys)
	}
}

// findReplica returns a client of a replica node.
func findReplica(t *testing.T, nodes []*redisServer) *goredis.Client {
	t.Helper()
	for _, n := range nodes {
		c := n.client()
		if role, _ := c.Do(bg, "ROLE").Slice(); len(role) > 0 && role[0] == "slave" {
			return c
		}
	}
	t.Fatal("no replica in the cluster")
	return nil
}

// waitRole waits, bounded, until c's node has the role want.
func waitRole(t *testing.T, c *goredis.Client, want string) {
	t.Helper()
	for range 200 {
		if isRole(c, want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("node never became %s", want)
}

// isRole reports whether c's node has the role want.
func isRole(c *goredis.Client, want string) bool {
	role, _ := c.Do(bg, "ROLE").Slice()
	return len(role) > 0 && role[0] == want
}

// TestClusterSignedFleet runs what this tier's names, scripts and pipelines
// do on a Cluster: a signed fleet with a TTL (GET and PTTL in one round
// trip, renewal after verification), and a failed build's marker, whose
// script reads the value and the lease of one slot.
func TestClusterSignedFleet(t *testing.T) {
	nodes := startCluster(t)
	url := "redis://" + nodes[0].addr() + "," + nodes[1].addr() + "," + nodes[2].addr()
	opts := Options{Timeout: time.Second, Secret: []byte(fleetSecret), TTL: time.Hour}
	a := newNode(t, url, "", opts)
	b := &builder{size: 20 << 10}
	for i := range 10 {
		if _, err := a.cache.GetOrBuild(bg, testKey(i), b.build(testKey(i))); err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
	}
	failed := testKey(10)
	fail := func(context.Context) ([]byte, error) { return nil, errors.New("build failed") }
	if _, err := a.cache.GetOrBuild(bg, failed, fail); err == nil {
		t.Fatal("the failing build succeeded")
	}
	flush(t, a)

	c := newNode(t, url, "", opts)
	start := time.Now()
	unlock, err := c.remote.Lock(bg, failed)
	unlock()
	if !errors.Is(err, kcache.ErrLastBuildFailed) || time.Since(start) > time.Second {
		t.Errorf("Lock after a failed build: %v after %v; want at once, without a lease, saying the build failed", err, time.Since(start))
	}
	for i := range 10 {
		r, err := c.cache.GetOrBuild(bg, testKey(i), nil)
		if err != nil || r.Outcome != kcache.OutcomeRemote {
			t.Errorf("key %d: %v, %v; want a remote hit", i, r.Outcome, err)
		}
	}
}
