package redis

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

// Environment of a fleet member: a child process re-running this test
// binary as one machine of the fleet.
const (
	envChild = "KCACHE_TEST_FLEET_CHILD" // "1" in a child
	envURL   = "KCACHE_TEST_FLEET_URL"   // the shared server; empty: no remote tier
	envDir   = "KCACHE_TEST_FLEET_DIR"   // the child's own disk directory
	envKeys  = "KCACHE_TEST_FLEET_KEYS"  // how many keys to build
	envStart = "KCACHE_TEST_FLEET_START" // Unix nanoseconds at which to start
	envDelay = "KCACHE_TEST_FLEET_DELAY" // what a build takes
	envSize  = "KCACHE_TEST_FLEET_SIZE"  // a binary's size
	envWork  = "KCACHE_TEST_FLEET_WORK"  // a build's CPU work, in SHA-256 rounds
	envFail  = "KCACHE_TEST_FLEET_FAIL"  // "1": every build fails, after its delay
	envRuns  = "KCACHE_TEST_FLEET_RUNS"  // a directory where builds mark themselves running
)

// memberReport is what a fleet member prints when it is done.
type memberReport struct {
	Builds   int64          `json:"builds"`
	Outcomes map[string]int `json:"outcomes"`
	Stats    kcache.Stats   `json:"stats"`
	// Elapsed runs from the fleet's common start to the member's end, its
	// queued writes sent.
	Elapsed time.Duration `json:"elapsed"`
	// Overlap is the most builds of other members this member's builds
	// found running when they began (with envRuns set).
	Overlap int `json:"overlap"`
}

// running marks a build of key i running in dir, for as long as build
// runs, and returns how many other builds were marked when it began.
func running(t *testing.T, dir string, i int, build func()) (others int) {
	name := fmt.Sprintf("%s/%d-%d", dir, os.Getpid(), i)
	if err := os.WriteFile(name, nil, 0o600); err != nil {
		t.Error(err)
	}
	defer os.Remove(name)
	ents, _ := os.ReadDir(dir)
	build()
	return len(ents) - 1
}

// TestFleetMember is one machine of a fleet when run as a child; it does
// nothing otherwise.
func TestFleetMember(t *testing.T) {
	if os.Getenv(envChild) != "1" {
		return
	}
	keys, _ := strconv.Atoi(os.Getenv(envKeys))
	start, _ := strconv.ParseInt(os.Getenv(envStart), 10, 64)
	delay, _ := time.ParseDuration(os.Getenv(envDelay))
	size, _ := strconv.Atoi(os.Getenv(envSize))
	work, _ := strconv.Atoi(os.Getenv(envWork))
	b := &builder{size: size, delay: delay, work: work}
	cfg, err := kcache.ConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	n := newNode(t, os.Getenv(envURL), os.Getenv(envDir), FromConfig(cfg))
	time.Sleep(time.Until(time.Unix(0, start)))

	// Every member asks for every key, in its own order, a few at a time,
	// as a process loading its kernels would.
	rep := memberReport{Outcomes: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	order := rand.Perm(keys)
	sem := make(chan struct{}, 4)
	for _, i := range order {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			key := testKey(i)
			build := b.build(key)
			if os.Getenv(envFail) == "1" {
				build = func(ctx context.Context) ([]byte, error) {
					run := func() { b.build(key)(ctx) }
					if dir := os.Getenv(envRuns); dir != "" {
						seen := running(t, dir, i, run)
						mu.Lock()
						rep.Overlap = max(rep.Overlap, seen)
						mu.Unlock()
					} else {
						run()
					}
					return nil, errors.New("build failed")
				}
			}
			r, err := n.cache.GetOrBuild(context.Background(), key, build)
			if err != nil {
				if os.Getenv(envFail) != "1" {
					t.Errorf("key %d: %v", i, err)
				}
				return
			}
			if string(r.Binary) != string(binaryOf(key, size)) {
				t.Errorf("key %d: wrong binary from %s", i, r.Outcome)
			}
			mu.Lock()
			rep.Outcomes[r.Outcome.String()]++
			mu.Unlock()
		})
	}
	wg.Wait()
	n.close(t)
	rep.Elapsed = time.Since(time.Unix(0, start))
	rep.Builds = b.runs.Load()
	rep.Stats = n.cache.Stats()
	out, _ := json.Marshal(rep)
	fmt.Printf("FLEET %s\n", out)
}

// fleet runs members child processes, each with its own disk directory,
// on the same keys, all starting at the same instant, and returns their
// reports.
func fleet(t testing.TB, url string, members, keys int, delay time.Duration, work, size int) []memberReport {
	t.Helper()
	dirs := make([]string, members)
	for m := range dirs {
		dirs[m] = tempDir(t, fmt.Sprint("m", m))
	}
	return fleetOn(t, url, dirs, keys, delay, work, size)
}

// fleetOn is fleet with member m's disk directory dirs[m]: members that
// share one are processes of one machine.
func fleetOn(t testing.TB, url string, dirs []string, keys int, delay time.Duration, work, size int) []memberReport {
	t.Helper()
	members := len(dirs)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(500 * time.Millisecond).UnixNano()
	reports := make([]memberReport, members)
	errs := make([]error, members)
	var wg sync.WaitGroup
	for m := range members {
		cmd := exec.Command(exe, "-test.run=^TestFleetMember$", "-test.count=1")
		cmd.Env = append(os.Environ(), envChild+"=1", envURL+"="+url, envDir+"="+dirs[m],
			envKeys+"="+strconv.Itoa(keys), envStart+"="+strconv.FormatInt(start, 10),
			envDelay+"="+delay.String(), envSize+"="+strconv.Itoa(size), envWork+"="+strconv.Itoa(work))
		if os.Getenv(kcache.EnvRemoteTimeout) == "" {
			// The whole fleet and its server share this machine's cores,
			// with the race detector slowing every goroutine down several
			// times: the server gets the time a loaded machine needs to
			// answer. The default timeout's behaviour is the fault tests'.
			cmd.Env = append(cmd.Env, kcache.EnvRemoteTimeout+"=2s")
		}
		wg.Go(func() {
			out, err := cmd.CombinedOutput()
			if err != nil {
				errs[m] = fmt.Errorf("member %d: %v\n%s", m, err, out)
				return
			}
			sc := bufio.NewScanner(strings.NewReader(string(out)))
			for sc.Scan() {
				if j, ok := strings.CutPrefix(sc.Text(), "FLEET "); ok {
					errs[m] = json.Unmarshal([]byte(j), &reports[m])
					return
				}
			}
			errs[m] = fmt.Errorf("member %d printed no report:\n%s", m, out)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return reports
}

// TestFleetSingleFlight: six machines with their own disks start cold at
// once on the same keys; the fleet builds each key once, and everyone else
// gets it from Redis, most of them having waited for its build.
func TestFleetSingleFlight(t *testing.T) {
	srv := startServer(t)
	const members, keys = 6, 8
	reps := fleet(t, srv.url(), members, keys, 300*time.Millisecond, 0, 64<<10)
	var builds int64
	outcomes := map[string]int{}
	for _, r := range reps {
		builds += r.Builds
		for o, n := range r.Outcomes {
			outcomes[o] += n
		}
	}
	t.Logf("builds %d, outcomes %v", builds, outcomes)
	for _, r := range reps {
		t.Logf("member: %+v", r)
	}
	if builds != keys {
		t.Errorf("the fleet built %d times for %d keys", builds, keys)
	}
	if outcomes["built"] != keys || outcomes["built"]+outcomes["waited"]+outcomes["remote"] != members*keys {
		t.Errorf("outcomes %v: want %d built, the rest waited or remote", outcomes, keys)
	}
}

// TestMachinesOfSeveralProcesses: three processes on each of two machines
// (a disk directory each, one Redis) start cold at once on the same keys.
// The disk tier's lock lets one process per machine ask for the lease,
// the lease one machine build: each key is built once in all, and every
// other process waits or fetches.
func TestMachinesOfSeveralProcesses(t *testing.T) {
	srv := startServer(t)
	a, b := tempDir(t, "a"), tempDir(t, "b")
	const keys = 6
	reps := fleetOn(t, srv.url(), []string{a, a, a, b, b, b}, keys, 300*time.Millisecond, 0, 64<<10)
	var builds int64
	outcomes := map[string]int{}
	for _, r := range reps {
		builds += r.Builds
		for o, n := range r.Outcomes {
			outcomes[o] += n
		}
	}
	t.Logf("builds %d, outcomes %v", builds, outcomes)
	if builds != keys {
		t.Errorf("two machines of three processes built %d times for %d keys", builds, keys)
	}
	if outcomes["built"]+outcomes["waited"]+outcomes["remote"]+outcomes["disk"] != len(reps)*keys {
		t.Errorf("outcomes %v: want every lookup answered", outcomes)
	}
}

// TestFailedBuildNoConvoyOnAMachine: four processes of one machine miss
// the same key, whose build fails. The first holds the machine's lock and
// the fleet's lease; once it fails, the others build at once, side by
// side, as machines do (TestFailedBuildNoConvoy). Before, each waited on
// the machine's lock for the one before it, and the machine built the key
// four times in a row: the lease's failure marker was read by a process
// still holding the machine's lock.
func TestFailedBuildNoConvoyOnAMachine(t *testing.T) {
	srv := startServer(t)
	t.Setenv(envFail, "1")
	t.Setenv(envRuns, tempDir(t, "runs"))
	a := tempDir(t, "a")
	overlap, builds := 0, int64(0)
	for _, r := range fleetOn(t, srv.url(), []string{a, a, a, a}, 1, time.Second, 0, 4096) {
		overlap = max(overlap, r.Overlap)
		builds += r.Builds
	}
	t.Logf("%d builds; at most %d others running when one began", builds, overlap)
	if overlap == 0 {
		t.Errorf("the machine's builds ran one after another: each waited on its lock for the one before")
	}
}

// TestUnstoredBuildOncePerMachine: machine A builds a key under the lease
// but its write is dropped (its queue takes nothing), so the lease says
// the value was not stored. Machine B's two processes, waiting meanwhile,
// build it once: the first builds at once, holding the machine's lock,
// and the second finds its binary on the machine's disk. A build that
// failed lets every process build at once (TestFailedBuildNoConvoyOnAMachine);
// one that succeeded and was not stored must not, or each process of every
// machine builds while the server refuses writes.
func TestUnstoredBuildOncePerMachine(t *testing.T) {
	srv := startServer(t)
	key := testKey(0)
	a := newNode(t, srv.url(), tempDir(t, "a"), Options{QueueBytes: 1})
	dirB := tempDir(t, "b")
	b1 := newNode(t, srv.url(), dirB, Options{})
	b2 := newNode(t, srv.url(), dirB, Options{})

	release := make(chan struct{})
	built := make(chan struct{})
	go func() {
		defer close(built)
		a.cache.GetOrBuild(bg, key, func(context.Context) ([]byte, error) {
			<-release
			return binaryOf(key, 4096), nil
		})
	}()
	waitLeased(t, a.remote, key)

	onB := &builder{size: 4096, delay: 300 * time.Millisecond}
	var wg sync.WaitGroup
	for _, n := range []*node{b1, b2} {
		wg.Go(func() {
			r, err := n.cache.GetOrBuild(bg, key, onB.build(key))
			if err != nil || string(r.Binary) != string(binaryOf(key, 4096)) {
				t.Errorf("machine b: %v, %v", r.Outcome, err)
			}
		})
		time.Sleep(50 * time.Millisecond) // the second process comes later: an order, not a measure
	}
	time.Sleep(100 * time.Millisecond) // let both wait
	close(release)
	<-built
	wg.Wait()
	if n := onB.runs.Load(); n != 1 {
		t.Errorf("machine b built the key %d times, want once", n)
	}
}

// waitLeased waits, bounded, until key's lease is held.
func waitLeased(t *testing.T, s *Store, key *kcache.Key) {
	t.Helper()
	for range 500 {
		if n, _ := s.client.Exists(bg, s.names.lease(key.Digest())).Result(); n == 1 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the lease was never taken")
}
