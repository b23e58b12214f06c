package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kcache/kcache"
	goredis "github.com/redis/go-redis/v9"
)

// ErrWaitTimeout is wrapped by Lock's error when another machine's build
// of the key outlasted Options.BuildWait; the caller then builds itself.
var ErrWaitTimeout = errors.New("redis: another machine's build did not finish in time")

// Lease scripts. Each runs on the keys of one digest, which share a
// Cluster slot (see names): KEYS[1] the value, KEYS[2] the lease.
var (
	// acquire returns 2 if the value exists (nothing to build), 1 if it
	// took the lease, 3 if the last holder's build failed (the lease holds
	// failedMarker, ARGV[3]), 4 if the last holder built and its value was
	// not stored (unstoredMarker, ARGV[5]), 0 if another holder has it. A
	// lease kcache did not write is replaced: one that is no string (its
	// GET fails; the writers' ACL grants no TYPE), one without an expiry,
	// or a marker set to outlive ARGV[4], failedTTL. Left alone, the first
	// would fail every acquire, the second make every machine wait for
	// KCACHE_BUILD_WAIT on every miss of the key, and the third take the
	// key's single-flight away for good.
	acquire = goredis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 2 end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
local l = redis.pcall('GET', KEYS[2])
local marker = l == ARGV[3] or l == ARGV[5]
local foreign = type(l) == 'table'
if not foreign then
  local ttl = redis.call('PTTL', KEYS[2])
  foreign = ttl < 0 or (marker and ttl > tonumber(ARGV[4]))
end
if foreign then
  redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
  return 1
end
if l == ARGV[3] then return 3 end
if l == ARGV[5] then return 4 end
return 0`)
	// renew extends the lease only while the caller still holds it.
	renew = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`)
	// release frees the lease only if the caller holds it: a holder whose
	// lease expired must not free a later holder's. If the value is not
	// there (the build failed, its write was dropped or refused), it
	// leaves the marker ARGV[2] (failedMarker or unstoredMarker) for
	// ARGV[3] milliseconds instead and returns 2.
	release = goredis.NewScript(`
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DEL', KEYS[2]) end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
return 2`)
)

// The markers a lease holds after a holder that left no value:
// failedMarker when it stored nothing (its build failed, or its binary was
// not to be stored), unstoredMarker when its write was dropped or refused.
// A waiter that finds either builds at once, without a lease, rather than
// take the lease and build while the others wait in turn: with a build
// that fails, or a value the server refuses, that queue made machines
// build one after another, up to KCACHE_BUILD_WAIT. After a failed build
// the waiter lets go of its machine's lock too (kcache.ErrLastBuildFailed),
// so that every process builds at once; after an unstored one it keeps
// it, since its own build reaches the machine's disk, where the others
// find it: one build per machine. Tokens are hex, so no token is a marker.
const (
	failedMarker   = "failed"
	unstoredMarker = "unstored"
)

// failedTTL is how long the marker stays. Waiters poll at most maxPoll
// apart, so every one sees it within a tenth of a second; twenty times
// that leaves room for a loaded machine. After it, the next machine to
// miss takes a lease again, so a failure that was passing (a dropped
// write) costs one round of parallel builds, not a day of them.
const failedTTL = 2 * time.Second

// Polling for another machine's build: the first look comes soon, for
// builds that were about to finish; the last at most maxPoll apart, which
// is small next to the build being waited for and costs the server one
// small script a tenth of a second per waiter.
const (
	minPoll = 5 * time.Millisecond
	maxPoll = 100 * time.Millisecond
)

// Lock takes key's build lease: fleet-wide single-flight. It returns when
// the caller holds the lease, or when the key's value appeared (another
// machine built it; unlock then does nothing and the caller's next Get
// hits), or with an error when the wait ran past Options.BuildWait (it
// wraps ErrWaitTimeout), ctx ended, or the server failed. On error the
// caller builds anyway. unlock is never nil.
//
// The holder's lease is renewed while it builds and released by unlock,
// after the holder's queued write of the key has been sent, so that the
// machines waiting find the value when the lease goes. A holder that
// leaves no value (its build failed, its write was dropped or refused)
// marks the lease for failedTTL instead, and every machine waiting builds
// at once; after a failed build Lock's error wraps
// kcache.ErrLastBuildFailed, so that kcache.Cache releases the machine's
// lock as well, and the processes waiting on it build at once too. If the
// holder dies, the lease expires after Options.LeaseTTL and a waiter
// takes it. A read-only store takes no lease and waits for nobody.
func (s *Store) Lock(ctx context.Context, key *kcache.Key) (unlock func(), err error) {
	none := func() {}
	if s.opts.ReadOnly || s.brk.allow() != nil {
		return none, nil
	}
	d := key.Digest()
	keys := []string{s.names.value(d), s.names.lease(d)}
	token := newToken()
	deadline := time.Now().Add(s.opts.BuildWait)
	for poll := minPoll; ; poll = min(2*poll, maxPoll) {
		r, err := s.script(ctx, acquire, keys, token, s.opts.LeaseTTL.Milliseconds(), failedMarker, failedTTL.Milliseconds(), unstoredMarker)
		switch {
		case err != nil:
			return none, s.failedAs(ctx, "lease", err, leaseTimeouts*s.opts.Timeout)
		case r == 1:
			return s.hold(d, token), nil
		case r == 3:
			return none, fmt.Errorf("redis: build lease: %w", kcache.ErrLastBuildFailed)
		case r == 4:
			s.log.Debug("kcache: the key's last remote builder's value was not stored; building without a lease", "key", d)
			return none, nil
		case r == 2:
			s.present.Store(d, struct{}{})
			return none, nil
		case time.Now().After(deadline):
			return none, fmt.Errorf("%w within %v (KCACHE_BUILD_WAIT)", ErrWaitTimeout, s.opts.BuildWait)
		}
		select {
		case <-ctx.Done():
			return none, fmt.Errorf("redis: waiting for another machine's build: %w", ctx.Err())
		case <-time.After(poll):
		}
	}
}

// leaseTimeouts is how many lookup timeouts a lease operation may take. A
// lease is taken only on the way to a build, which costs far more, and a
// lease lost to a slow answer costs a whole build on another machine.
const leaseTimeouts = 5

// script runs sc on keys and returns its number.
func (s *Store) script(ctx context.Context, sc *goredis.Script, keys []string, args ...any) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, leaseTimeouts*s.opts.Timeout)
	defer cancel()
	r, err := sc.Run(ctx, s.client, keys, args...).Int64()
	if err == nil {
		s.brk.succeed()
	}
	return r, err
}

// hold renews the lease on d until the returned unlock is called, which
// releases it once the key's queued write is over.
func (s *Store) hold(d kcache.Digest, token string) (unlock func()) {
	put := new(atomic.Bool)
	s.held.Store(d, put)
	stop := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(s.opts.LeaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-s.done:
				return // a lease not released by now expires
			case <-t.C:
				r, err := s.script(context.Background(), renew, []string{s.names.lease(d)}, token, s.opts.LeaseTTL.Milliseconds())
				if err != nil || r == 0 {
					// Lost or unreachable: the build goes on, and at worst
					// another machine builds the key too.
					s.log.Debug("kcache: remote build lease not renewed", "key", d, "err", err)
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			s.held.CompareAndDelete(d, put)
			marker := failedMarker
			if put.Load() {
				marker = unstoredMarker
			}
			s.tasks.Go(func() {
				<-renewed
				<-s.w.written(d)
				keys := []string{s.names.value(d), s.names.lease(d)}
				if _, err := s.script(context.Background(), release, keys, token, marker, failedTTL.Milliseconds()); err != nil {
					s.log.Debug("kcache: remote build lease not released; it expires", "key", d, "err", err)
				}
			})
		})
	}
}

// newToken returns a random lease token: only its holder knows it, so only
// its holder can renew or release the lease.
func newToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
