package redis

import (
	"context"
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
	where  string // KCACHE_REMOTE=<the URL, password redacted>, for messages
	log    *slog.Logger
	brk    breaker
	w      *writer
	leases sync.WaitGroup // lease releases in flight; Close waits for them
	done   chan struct{}  // closed by Close: lease renewals stop
	closed sync.Once

	rejected atomic.Bool // a rejected value has been logged as a warning
	// present holds digests whose value Lock found on the server: the
	// caller's next Get of one is the last step before a build, and may
	// wait as long as a lease operation for a value known to be there.
	present sync.Map
	// counts are the events Cache.Stats cannot see: background writes that
	// failed or timed out.
	errors, timeouts atomic.Int64
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
		return nil, fmt.Errorf("redis: %s=%s: %w", kcache.EnvRemote, redacted(opts.URL), err)
	}
	s := &Store{
		client: goredis.NewUniversalClient(srv.clientOptions(&opts)),
		opts:   opts,
		codec:  codec{secret: opts.Secret},
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

// Redis keys. The hash tag (the digest in braces) puts a key's value and
// lease in the same Cluster slot, so one script can read both. The prefix
// carries the format version: a new format never reads an old one's values.
func valueKey(d kcache.Digest) string { return keyPrefix + "{" + d.String() + "}:v" }
func leaseKey(d kcache.Digest) string { return keyPrefix + "{" + d.String() + "}:lease" }

const keyPrefix = "kcache:v1:"

// Get returns the entry for key. A missing entry, or one that fails a
// check (the error then wraps kcache.ErrRejected), is a miss; a server
// that fails or does not answer within Options.Timeout is an error naming
// KCACHE_REMOTE. While the circuit breaker is open Get misses at once.
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
	var cmd *goredis.StringCmd
	if s.opts.TTL > 0 && !s.opts.ReadOnly {
		// A hit renews the expiry in the same round trip: entries in use
		// never expire.
		cmd = s.client.GetEx(ctx, valueKey(d), s.opts.TTL)
	} else {
		cmd = s.client.Get(ctx, valueKey(d))
	}
	v, err := cmd.Bytes()
	if errors.Is(err, goredis.Nil) {
		s.brk.succeed()
		return kcache.Entry{}, fmt.Errorf("redis: no entry: %w", kcache.ErrMiss)
	}
	if err != nil {
		return kcache.Entry{}, s.failed("get", err, timeout)
	}
	s.brk.succeed()
	e, err := s.codec.decode(key, v)
	if err != nil {
		s.warnRejected(d, err)
		return kcache.Entry{}, err
	}
	return e, nil
}

// warnRejected logs the first rejected value as a warning and the rest at
// debug level. The value stays: the reader may be the one with the wrong
// secret, and deleting would let any misconfigured client wipe the fleet's
// cache.
func (s *Store) warnRejected(d kcache.Digest, err error) {
	if s.rejected.CompareAndSwap(false, true) {
		s.log.Warn("kcache: remote entry rejected; building instead", "where", s.where, "key", d, "err", err)
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
	rec, _ := key.MarshalBinary()
	s.w.enqueue(job{digest: key.Digest(), rec: rec, entry: e})
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
	if err := s.client.Del(ctx, valueKey(key.Digest())).Err(); err != nil {
		return s.failed("delete", err, s.opts.Timeout)
	}
	s.brk.succeed()
	return nil
}

// TierStats reports the failures of background writes, which no caller
// sees.
func (s *Store) TierStats() kcache.TierStats {
	return kcache.TierStats{Errors: s.errors.Load(), Timeouts: s.timeouts.Load()}
}

// Close writes what is queued, waits for leases being released, and closes
// the connections. If ctx ends first, what is left is dropped and Close
// returns an error wrapping ctx's.
func (s *Store) Close(ctx context.Context) error {
	errFlush := s.w.close(ctx)
	s.closed.Do(func() { close(s.done) })
	done := make(chan struct{})
	go func() { s.leases.Wait(); close(done) }()
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
