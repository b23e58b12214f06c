package redis

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kcache/kcache"
)

// errUnavailable is what the store answers while its breaker is open: a
// miss that costs nothing.
var errUnavailable = fmt.Errorf("redis: remote tier backing off after repeated failures: %w", kcache.ErrMiss)

// breaker is a circuit breaker: after threshold failures in a row it keeps
// the store off for backoff, so a dead or hung server costs one timeout a
// few times, not on every lookup. When backoff has passed the next
// operation is tried; one more failure opens it again.
type breaker struct {
	threshold int
	backoff   time.Duration
	now       func() time.Time

	failures atomic.Int64 // in a row
	until    atomic.Int64 // Unix nanoseconds the breaker stays open until
	opened   atomic.Bool  // it has opened once in this process
}

// allow returns errUnavailable while the breaker is open.
func (b *breaker) allow() error {
	if b.now().UnixNano() < b.until.Load() {
		return errUnavailable
	}
	return nil
}

// fail records a failure, and reports whether it opened the breaker for
// the first time in the process: only that one is worth a warning.
func (b *breaker) fail() (first bool) {
	if b.failures.Add(1) < int64(b.threshold) {
		return false
	}
	b.until.Store(b.now().Add(b.backoff).UnixNano())
	return b.opened.CompareAndSwap(false, true)
}

// succeed records a success, which closes the breaker.
func (b *breaker) succeed() {
	if b.failures.Load() != 0 {
		b.failures.Store(0)
	}
}

// describe wraps err, from operation op, in one line that names
// KCACHE_REMOTE and says what to check.
func (s *Store) describe(op string, err error, timeout time.Duration) error {
	return fmt.Errorf("redis: %s: %s: %s: %w", op, s.where, hint(err, timeout), err)
}

// hint says in words what a failure most likely means.
func hint(err error, timeout time.Duration) string {
	msg := err.Error()
	has := func(s ...string) bool {
		for _, x := range s {
			if strings.Contains(msg, x) {
				return true
			}
		}
		return false
	}
	var handshake *handshakeError
	var header tls.RecordHeaderError
	var verify *tls.CertificateVerificationError
	var dns *net.DNSError
	var t interface{ Timeout() bool }
	switch {
	case errors.As(err, &header):
		return "TLS handshake failed: the server does not speak TLS (use redis://, not rediss://)"
	case errors.As(err, &verify):
		return "TLS certificate not trusted (add its CA to the system's, or check the host name)"
	case errors.As(err, &handshake):
		return "TLS handshake failed: the server does not answer in TLS (use redis://, not rediss://, for a plain server)"
	case has("WRONGPASS", "NOAUTH", "invalid password", "invalid username-password"):
		return "authentication failed: check the user and password in the URL"
	case has("NOPERM"):
		return "the user may not run this command (a read-only user needs KCACHE_REMOTE_READONLY=1)"
	case has("READONLY"):
		return "the server is a read-only replica"
	case has("NOREPLICAS"):
		return "the server refuses writes: fewer replicas in sync than its min-replicas-to-write"
	case has("OOM"):
		return "the server is out of memory (set maxmemory-policy allkeys-lru)"
	case has("LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "MOVED", "ASK "):
		return "the server is not ready (loading data, or a Cluster failing over)"
	case errors.As(err, &t) && t.Timeout():
		return fmt.Sprintf("no answer within %v (raise KCACHE_REMOTE_TIMEOUT if the server is far)", timeout)
	case errors.As(err, &dns), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "server unreachable"
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection closed by the server (if it speaks TLS, use rediss://)"
	}
	return "server failed"
}
