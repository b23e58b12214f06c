package redis

import (
	"cmp"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kcache/kcache"
	goredis "github.com/redis/go-redis/v9"
)

// Store is kcache's remote tier: built binaries in Redis, shared by a
// fleet. It implements kcache.Store, kcache.Locker (build leases, so that
// one machine builds a key while the others wait) and kcache.StatsReporter,
// and is safe for concurrent use.
type Store struct {
	client goredis.UniversalClient
	opts   Options
	codec  codec
	names  names
	where  string // KCACHE_REMOTE=<the URL, password redacted>, for messages
	log    *slog.Logger
	brk    breaker
	w      *writer
	tasks  tasks         // lease releases and expiry renewals in flight; Close waits for them
	done   chan struct{} // closed by Close: lease renewals stop
	closed sync.Once

	rejected atomic.Bool // a rejected value has been logged as a warning
	// present holds digests whose value Lock found on the server: the
	// caller's next Get of one is the last step before a build, and may
	// wait as long as a lease operation for a value known to be there.
	present sync.Map
	// held maps the digest of each lease this store holds to a flag that
	// Put sets: the lease's release tells the fleet whether its holder
	// built the key (and its write was lost) or not (see unstoredMarker).
	held sync.Map
	// counts are the events Cache.Stats cannot see: background writes that
	// failed or timed out, were dropped, or found a value already stored.
	errors, timeouts, dropped, existed atomic.Int64
}

var (
	_ kcache.Store         = (*Store)(nil)
	_ kcache.Locker        = (*Store)(nil)
	_ kcache.StatsReporter = (*Store)(nil)
)

// Open returns a Store for the server opts.URL names. It does not wait on
// the network: it connects in the background, so that the first lookup
// finds a connection ready, and an unreachable server shows in the first
// lookups, which miss, and in one warning. It fails only on a malformed
// URL.
//
// go-redis prints its own messages to standard error; Open sends them to
// opts.Logger at debug level instead, since the store reports failures
// itself, once and in words. go-redis has one logger per process: it is
// the last opened store's.
func Open(opts Options) (*Store, error) {
	opts.fill()
	srv, err := parseURL(opts.URL)
	if err != nil {
		// Not even redacted: a URL that does not parse may not be split
		// where its author meant, and its password may sit anywhere.
		return nil, fmt.Errorf("redis: %s: %w", kcache.EnvRemote, err)
	}
	s := &Store{
		client: goredis.NewUniversalClient(srv.clientOptions(&opts)),
		opts:   opts,
		codec:  codec{secret: opts.Secret},
		names:  namesFor(opts.Secret),
		where:  kcache.EnvRemote + "=" + redacted(opts.URL),
		log:    opts.Logger,
		brk:    breaker{threshold: opts.Failures, backoff: opts.Backoff, now: time.Now},
		done:   make(chan struct{}),
	}
	s.w = newWriter(s)
	goredis.SetLogger(clientLog{opts.Logger})
	go s.warm()
	return s, nil
}

// warm opens a connection ahead of the first lookup, which would otherwise
// pay for the dial (and a TLS handshake) within its timeout. Its failure
// is left for the lookups to report.
func (s *Store) warm() {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.WriteTimeout)
	defer cancel()
	s.client.Ping(ctx)
}

// clientLog is go-redis's logger: debug lines of the store's.
type clientLog struct{ log *slog.Logger }

func (l clientLog) Printf(_ context.Context, format string, v ...any) {
	l.log.Debug("kcache: redis client: " + fmt.Sprintf(format, v...))
}

// Get returns the entry for key. A missing entry, or one that fails a
// check (the error then wraps kcache.ErrRejected), is a miss; a server
// that fails or does not answer within Options.Timeout is an error naming
// KCACHE_REMOTE. While the circuit breaker is open Get misses at once.
//
// A value that fails a check is removed, unless the store is read only:
// under the store's names only a client holding its secret writes (see
// names), so such a value is damage or a forgery, and left in place it
// would keep the fleet from storing the key for good (writes never
// replace a value). A hit renews the entry's expiry, after the value
// verified, never before.
func (s *Store) Get(ctx context.Context, key *kcache.Key) (kcache.Entry, error) {
	if err := s.brk.allow(); err != nil {
		return kcache.Entry{}, err
	}
	d := key.Digest()
	timeout := s.opts.Timeout
	if _, ok := s.present.LoadAndDelete(d); ok {
		timeout *= leaseTimeouts
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, ttl, err := s.fetch(ctx, d)
	if errors.Is(err, goredis.Nil) {
		s.brk.succeed()
		return kcache.Entry{}, fmt.Errorf("redis: no entry: %w", kcache.ErrMiss)
	}
	if goredis.HasErrorPrefix(err, "WRONGTYPE") {
		// Not a string: no kcache value, but another program's key (or a
		// hostile one) under the tier's name. The server answered, so it
		// is no failure for the breaker; left in place it would fail every
		// lookup and keep the fleet from storing the key for good.
		s.brk.succeed()
		err = reject("not a string value")
		s.warnRejected(d, err)
		s.discard(ctx, d, notString)
		return kcache.Entry{}, err
	}
	if err != nil {
		return kcache.Entry{}, s.failedAs(ctx, "get", err, timeout)
	}
	s.brk.succeed()
	e, err := s.codec.decode(key, v)
	if err != nil {
		s.warnRejected(d, err)
		s.discard(ctx, d, valueSum(v))
		return kcache.Entry{}, err
	}
	s.renew(d, ttl)
	return e, nil
}

// renews reports whether hits renew expiries: a read-only client may not.
func (s *Store) renews() bool { return s.opts.TTL > 0 && !s.opts.ReadOnly }

// fetch reads d's value and, when hits renew expiries, the time it has
// left, in the same round trip.
func (s *Store) fetch(ctx context.Context, d kcache.Digest) (v []byte, ttl time.Duration, err error) {
	if !s.renews() {
		v, err = s.client.Get(ctx, s.names.value(d)).Bytes()
		return v, 0, err
	}
	var get *goredis.StringCmd
	var pttl *goredis.DurationCmd
	_, err = s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		get = p.Get(ctx, s.names.value(d))
		pttl = p.PTTL(ctx, s.names.value(d))
		return nil
	})
	v, gerr := get.Bytes()
	if gerr != nil || err != nil {
		return nil, 0, cmp.Or(gerr, err)
	}
	return v, pttl.Val(), nil
}

// renewAfter is how much of its TTL an entry may have lost before a hit
// renews it: a hot entry is renewed a few times per TTL rather than on
// every hit of every machine, and never comes close to expiring.
const renewAfter = 8

// renew extends the expiry of d's value, which a hit just verified, when
// an eighth of its TTL has passed since the last renewal (ttl is what was
// left). It runs in the background, with nobody waiting: a renewal lost
// costs nothing while the entry is still in use, since the next hit
// renews it.
func (s *Store) renew(d kcache.Digest, ttl time.Duration) {
	if !s.renews() || ttl >= s.opts.TTL-s.opts.TTL/renewAfter {
		return
	}
	s.tasks.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
		defer cancel()
		if err := s.client.PExpire(ctx, s.names.value(d), s.opts.TTL).Err(); err != nil {
			s.log.Debug("kcache: remote entry's expiry not renewed", "key", d, "err", err)
		}
	})
}

// discard removes d's value, which failed a check, if it is still the
// value seen (compare-and-delete: a writer may have replaced it since):
// seen is valueSum of the value, or notString for one that was not a
// string. Best effort: a value not removed is found again, and rejected
// again.
func (s *Store) discard(ctx context.Context, d kcache.Digest, seen string) {
	if s.opts.ReadOnly {
		return
	}
	r, err := s.script(ctx, removeIf, []string{s.names.value(d)}, seen)
	if err != nil {
		s.log.Debug("kcache: rejected remote entry not removed", "key", d, "err", err)
		return
	}
	if r == 1 {
		s.log.Debug("kcache: rejected remote entry removed", "key", d)
	}
}

// valueSum names a value seen, for removeIf: its SHA-1 in hex, the
// script's own hash function. The value was already rejected, so nothing
// trusts the name.
func valueSum(v []byte) string {
	sum := sha1.Sum(v)
	return hex.EncodeToString(sum[:])
}

// notString is what removeIf is given for a value that was no string.
const notString = "not a string"

// removeIf deletes KEYS[1] if its value's SHA-1 is ARGV[1] or, with
// ARGV[1] notString, if it is no string (its GET fails): no kcache value
// is anything else.
var removeIf = goredis.NewScript(`
local v = redis.pcall('GET', KEYS[1])
if not v then return 0 end
if type(v) == 'table' then
  if v.err and ARGV[1] == 'not a string' then return redis.call('DEL', KEYS[1]) end
  return 0
end
if redis.sha1hex(v) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// warnRejected logs the first rejected value as a warning and the rest at
// debug level.
func (s *Store) warnRejected(d kcache.Digest, err error) {
	if s.rejected.CompareAndSwap(false, true) {
		s.log.Warn("kcache: remote entry rejected; removing it and building instead", "where", s.where, "key", d, "err", err)
		return
	}
	s.log.Debug("kcache: remote entry rejected", "key", d, "err", err)
}

// Put queues e to be written for key and returns at once; the write
// happens in the background, and Close flushes what is queued. A full
// queue drops the write rather than make the caller wait. A read-only
// store writes nothing.
func (s *Store) Put(_ context.Context, key *kcache.Key, e kcache.Entry) error {
	if s.opts.ReadOnly {
		return nil
	}
	d := key.Digest()
	if put, ok := s.held.Load(d); ok {
		put.(*atomic.Bool).Store(true)
	}
	rec, _ := key.MarshalBinary()
	s.w.enqueue(job{digest: d, rec: rec, entry: e})
	return nil
}

// Delete removes key's entry. The cache calls it when the runtime refused
// a binary the tiers handed back.
func (s *Store) Delete(ctx context.Context, key *kcache.Key) error {
	if s.opts.ReadOnly {
		return nil
	}
	if err := s.brk.allow(); err != nil {
		return nil // the entry cannot be reached, by anyone
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	if err := s.client.Del(ctx, s.names.value(key.Digest())).Err(); err != nil {
		return s.failedAs(ctx, "delete", err, s.opts.Timeout)
	}
	s.brk.succeed()
	return nil
}

// TierStats reports what became of background writes, which no caller
// sees: failures, drops, and values found already stored.
func (s *Store) TierStats() kcache.TierStats {
	return kcache.TierStats{Errors: s.errors.Load(), Timeouts: s.timeouts.Load(),
		Dropped: s.dropped.Load(), Existed: s.existed.Load()}
}

// Close writes what is queued, waits for leases being released, and closes
// the connections. If ctx ends first, what is left is dropped and Close
// returns an error wrapping ctx's.
func (s *Store) Close(ctx context.Context) error {
	errFlush := s.w.close(ctx)
	s.closed.Do(func() { close(s.done) })
	done := make(chan struct{})
	go func() { s.tasks.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errFlush = errors.Join(errFlush, fmt.Errorf("redis: lease releases unfinished: %w", ctx.Err()))
	}
	return errors.Join(errFlush, s.client.Close())
}

// failed records a failed operation with the breaker and returns the error
// to report: one line, naming KCACHE_REMOTE and saying what to check.
func (s *Store) failed(op string, err error, timeout time.Duration) error {
	err = s.describe(op, err, timeout)
	if s.brk.fail() {
		s.log.Warn("kcache: remote tier unavailable; going on without it for a while",
			"backoff", s.opts.Backoff, "err", err)
	}
	return err
}

// failedAs is failed for an operation run under ctx, the caller's context
// or one derived from it. One the caller cancelled says nothing about the
// server: it is the caller's error, and no failure for the breaker, which
// would otherwise switch the tier off for every other caller when a few
// gave up.
func (s *Store) failedAs(ctx context.Context, op string, err error, timeout time.Duration) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("redis: %s: %w", op, ctx.Err())
	}
	return s.failed(op, err, timeout)
}
