package disk

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kcache/kcache"
)

// The cache root holds the counters every process of the machine adds to:
//
//	counters.txt   "kcache-counters 1", then one "name value" line per counter
//	counters.lock  held while a process merges its counts
//
// They sit in the root, not in the version directory, so that they outlive
// Clear and a change of format version, as ccache's statistics outlive
// `ccache -C`. A process never writes them on a hit: kcache.Cache
// accumulates its counts in memory and merges them here in one locked
// read-add-write (see kcache.StatsMerger).

const (
	countersName   = "counters.txt"
	countersLock   = "counters.lock"
	countersHeader = "kcache-counters 1"
	// maxCountersSize bounds what a reader takes from counters.txt: a few
	// dozen short lines are all this package writes.
	maxCountersSize = 64 << 10
)

// Counters are the cache's persistent counters, summed over every process
// that merged its counts since the cache was created or the counters were
// zeroed. Field names in JSON are a public interface (`kcache stats --json`).
type Counters struct {
	MemoryHits int64 `json:"memory_hits"` // lookups served by a process's object tier
	DiskHits   int64 `json:"disk_hits"`   // lookups served by this disk tier
	RemoteHits int64 `json:"remote_hits"` // lookups served by a remote tier
	// The remote tier's other counts; see kcache.TierStats.
	RemoteMisses   int64         `json:"remote_misses"`   // lookups the remote tier could not answer
	RemoteErrors   int64         `json:"remote_errors"`   // failures of the remote tier, timeouts included
	RemoteRejected int64         `json:"remote_rejected"` // remote values refused by an integrity or authenticity check
	RemoteTimeouts int64         `json:"remote_timeouts"` // of the errors, the remote tier not answering in time
	RemoteWaited   int64         `json:"remote_waited"`   // remote hits that waited for another machine's build
	RemoteDropped  int64         `json:"remote_dropped"`  // remote writes dropped: the write queue full or closed
	RemoteExisted  int64         `json:"remote_existed"`  // remote writes that found a value already stored (SET NX)
	Misses         int64         `json:"misses"`          // lookups no tier answered, so the compiler ran
	DiskMisses     int64         `json:"disk_misses"`     // lookups this disk tier could not answer
	DiskErrors     int64         `json:"disk_errors"`     // I/O and lock failures of the disk tier
	DiskDropped    int64         `json:"disk_dropped"`    // Puts not stored: the cache at its ceiling while others evicted
	Builds         int64         `json:"builds"`          // compiler runs that succeeded
	FailedBuilds   int64         `json:"failed_builds"`   // compiler runs that failed
	Waited         int64         `json:"waited"`          // of the hits, those read after waiting for another process's build
	Evictions      int64         `json:"evictions"`       // entries removed by eviction or prune
	EvictedBytes   int64         `json:"evicted_bytes"`   // bytes those entries held
	BuildTime      time.Duration `json:"build_time_ns"`   // time spent compiling
	SavedTime      time.Duration `json:"saved_time_ns"`   // build time that hits avoided
}

// counterFields names each counter in counters.txt. The names are the file
// format: never rename one.
func (c *Counters) fields() []struct {
	name string
	v    *int64
} {
	return []struct {
		name string
		v    *int64
	}{
		{"memory_hits", &c.MemoryHits}, {"disk_hits", &c.DiskHits}, {"remote_hits", &c.RemoteHits},
		{"remote_misses", &c.RemoteMisses}, {"remote_errors", &c.RemoteErrors}, {"remote_rejected", &c.RemoteRejected},
		{"remote_timeouts", &c.RemoteTimeouts}, {"remote_waited", &c.RemoteWaited},
		{"remote_dropped", &c.RemoteDropped}, {"remote_existed", &c.RemoteExisted},
		{"misses", &c.Misses}, {"disk_misses", &c.DiskMisses}, {"disk_errors", &c.DiskErrors},
		{"disk_dropped", &c.DiskDropped},
		{"builds", &c.Builds}, {"failed_builds", &c.FailedBuilds}, {"waited", &c.Waited},
		{"evictions", &c.Evictions}, {"evicted_bytes", &c.EvictedBytes},
		{"build_time_ns", (*int64)(&c.BuildTime)}, {"saved_time_ns", (*int64)(&c.SavedTime)},
	}
}

// Add adds every counter of d to c.
func (c *Counters) Add(d Counters) {
	dst, src := c.fields(), d.fields()
	for i := range dst {
		*dst[i].v += *src[i].v
	}
}

// encode returns c in the counters.txt format.
func (c Counters) encode() []byte {
	b := []byte(countersHeader + "\n")
	for _, f := range c.fields() {
		b = fmt.Appendf(b, "%s %d\n", f.name, *f.v)
	}
	return b
}

// decode parses the counters.txt format. Names it does not know
// (written by a later kcache) are ignored; a malformed line, a negative or
// repeated counter, or a wrong header is a *kcache.DecodeError.
func (c *Counters) decode(data []byte) error {
	*c = Counters{}
	if len(data) > maxCountersSize {
		return countersError("too large")
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	if !sc.Scan() || sc.Text() != countersHeader {
		return countersError("bad header")
	}
	byName := map[string]*int64{}
	for _, f := range c.fields() {
		byName[f.name] = f.v
	}
	seen := map[string]bool{}
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		n, err := strconv.ParseInt(val, 10, 64)
		if !ok || err != nil || n < 0 || name == "" || seen[name] {
			return countersError(fmt.Sprintf("bad line %q", sc.Text()))
		}
		seen[name] = true
		if v := byName[name]; v != nil {
			*v = n
		}
	}
	return nil
}

func countersError(reason string) error {
	return &kcache.DecodeError{What: "counters", Reason: reason}
}

// CountersFromStats converts one process's kcache.Stats into Counters for
// this tier: its own hits, misses and errors, and the process's builds.
func CountersFromStats(s kcache.Stats) Counters {
	return Counters{
		MemoryHits:     s.Memory.Hits,
		DiskHits:       s.Disk.Hits,
		RemoteHits:     s.Remote.Hits,
		RemoteMisses:   s.Remote.Misses,
		RemoteErrors:   s.Remote.Errors,
		RemoteRejected: s.Remote.Rejected,
		RemoteTimeouts: s.Remote.Timeouts,
		RemoteWaited:   s.Remote.Waited,
		RemoteDropped:  s.Remote.Dropped,
		RemoteExisted:  s.Remote.Existed,
		Misses:         s.Builds + s.FailedBuilds,
		DiskMisses:     s.Disk.Misses,
		DiskErrors:     s.Disk.Errors,
		Builds:         s.Builds,
		FailedBuilds:   s.FailedBuilds,
		Waited:         s.Waited,
		BuildTime:      s.BuildTime,
		SavedTime:      s.SavedTime,
	}
}

var _ kcache.StatsMerger = (*Store)(nil)

// MergeStats adds one process's counts to the persistent counters; it is
// how kcache.Cache.Close hands them over.
func (s *Store) MergeStats(ctx context.Context, delta kcache.Stats) error {
	return s.AddCounters(ctx, CountersFromStats(delta))
}

// CountEvictions records that an eviction pass (or a prune) removed entries
// holding bytes. Evictions are rare and already rewrite the tree, so they
// are merged at once rather than held in memory.
func (s *Store) CountEvictions(ctx context.Context, entries int, bytes int64) error {
	if entries == 0 && bytes == 0 {
		return nil
	}
	return s.AddCounters(ctx, Counters{Evictions: int64(entries), EvictedBytes: bytes})
}

// Counters returns the persistent counters. A missing file reads as zero; a
// damaged one is an error naming the file (ZeroCounters starts it afresh).
func (s *Store) Counters(ctx context.Context) (Counters, error) {
	var c Counters
	data, err := readSmallFile(filepath.Join(s.root, countersName))
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("disk: counters: %w", err)
	}
	if err := c.decode(data); err != nil {
		return c, fmt.Errorf("disk: counters in %s: %w", filepath.Join(s.root, countersName), err)
	}
	return c, nil
}

// AddCounters adds d to the persistent counters, under the counters' own
// lock (not the size file's, which writers of entries wait on). A damaged
// counters file is started afresh from d rather than blocking every merge.
func (s *Store) AddCounters(ctx context.Context, d Counters) error {
	return s.updateCounters(ctx, func(c *Counters) { c.Add(d) })
}

// ZeroCounters sets every persistent counter to zero.
func (s *Store) ZeroCounters(ctx context.Context) error {
	return s.updateCounters(ctx, func(c *Counters) { *c = Counters{} })
}

func (s *Store) updateCounters(ctx context.Context, update func(*Counters)) error {
	unlock, err := flockPath(ctx, s.modes, filepath.Join(s.root, countersLock), s.opts.LockTimeout)
	if err != nil {
		return fmt.Errorf("disk: counters: %w", err)
	}
	defer unlock()
	c, err := s.Counters(ctx)
	if err != nil {
		s.log.Warn("kcache: counters damaged; starting them afresh", "err", err)
		c = Counters{}
	}
	update(&c)
	data := c.encode()
	if err := s.modes.writeFile(s.root, filepath.Join(s.root, countersName), data, false, time.Time{}, nil); err != nil {
		return fmt.Errorf("disk: counters: %w", err)
	}
	return nil
}

// flockPath takes an exclusive flock on the file at path, creating it, and
// waits at most wait for it. The kernel drops the lock if the process dies.
func flockPath(ctx context.Context, m modes, path string, wait time.Duration) (unlock func(), err error) {
	f, err := m.openFile(path, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, err
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("%w: %s", ErrLockTimeout, path)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(delay):
		}
	}
}
