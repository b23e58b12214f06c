package redis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kcache/kcache"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Options configures a Store. Only URL is required; every other zero value
// is a usable default.
type Options struct {
	// URL names the server (KCACHE_REMOTE): redis://[user:password@]host:port[/db]
	// for a standalone server, rediss:// for TLS, and several addresses,
	// comma-separated (redis://h1:7000,h2:7000) or as addr= parameters, for
	// a Cluster, of which any reachable node will do. No other parameter
	// is taken.
	URL string
	// Secret, when set, signs every value written and rejects every value
	// read that is not signed with it (KCACHE_REMOTE_SECRET).
	Secret []byte
	// ReadOnly makes the store read only: Put, Delete and Lock do nothing
	// (KCACHE_REMOTE_READONLY).
	ReadOnly bool
	// TTL is how long an entry lives after its last write or hit; 0 leaves
	// entries to the server's maxmemory policy (KCACHE_REMOTE_TTL).
	TTL time.Duration
	// Timeout bounds each lookup, lease operation and connection attempt;
	// 0 means DefaultTimeout (KCACHE_REMOTE_TIMEOUT).
	Timeout time.Duration
	// WriteTimeout bounds each background write; 0 means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// BuildWait bounds how long Lock waits for another machine's build of
	// the same key; 0 means DefaultBuildWait (KCACHE_BUILD_WAIT).
	BuildWait time.Duration
	// LeaseTTL is how long a build lease outlives its holder; 0 means
	// DefaultLeaseTTL.
	LeaseTTL time.Duration
	// QueueSize and QueueBytes bound the writes waiting to be sent; a write
	// that does not fit is dropped. 0 means DefaultQueueSize and
	// DefaultQueueBytes.
	QueueSize  int
	QueueBytes int64
	// Failures is how many failures in a row open the circuit breaker, and
	// Backoff how long it then keeps the store off; 0 means DefaultFailures
	// and DefaultBackoff.
	Failures int
	Backoff  time.Duration
	// Logger receives warnings and debug events; nil discards them.
	Logger *slog.Logger
}

// Defaults for Options.
const (
	// DefaultTimeout is what an unanswered lookup may cost: a loopback or
	// data-centre round trip with a 6 MB value takes a few milliseconds,
	// and a compile it would avoid takes a hundred milliseconds at least.
	DefaultTimeout = 100 * time.Millisecond
	// DefaultWriteTimeout bounds a background write: large values on a
	// slow link take longer than a lookup may, and nobody waits for them.
	DefaultWriteTimeout = 5 * time.Second
	// DefaultBuildWait matches the disk tier's wait for a build on the same
	// machine: past two minutes the other builder is more likely hung.
	DefaultBuildWait = 2 * time.Minute
	// DefaultLeaseTTL is how long the fleet waits for a builder that died
	// without releasing its lease. The holder renews it every third of
	// that, so three renewals in a row must fail to lose it.
	DefaultLeaseTTL = 10 * time.Second
	// DefaultQueueSize and DefaultQueueBytes bound the background writes:
	// enough for a burst of builds at start-up, small enough that a dead
	// server cannot make the queue hold a process's memory.
	DefaultQueueSize  = 256
	DefaultQueueBytes = 256 << 20
	// DefaultFailures in a row mean the server is down rather than
	// hiccuping; DefaultBackoff is long enough that a dead server costs
	// nothing measurable, short enough that a restarted one is used soon.
	DefaultFailures = 5
	DefaultBackoff  = 10 * time.Second
)

// FromConfig returns the Options that c describes.
func FromConfig(c kcache.Config) Options {
	o := Options{
		URL:       c.Remote,
		ReadOnly:  c.RemoteReadOnly,
		TTL:       c.RemoteTTL,
		Timeout:   c.RemoteTimeout,
		BuildWait: c.BuildWait,
	}
	if c.RemoteSecret != "" {
		o.Secret = []byte(c.RemoteSecret)
	}
	return o
}

// fill checks o and sets its defaults.
func (o *Options) fill() {
	set := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	set(&o.Timeout, DefaultTimeout)
	set(&o.WriteTimeout, DefaultWriteTimeout)
	set(&o.BuildWait, DefaultBuildWait)
	set(&o.LeaseTTL, DefaultLeaseTTL)
	set(&o.Backoff, DefaultBackoff)
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.QueueBytes <= 0 {
		o.QueueBytes = DefaultQueueBytes
	}
	if o.Failures <= 0 {
		o.Failures = DefaultFailures
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// endpoint is what a URL says about the server.
type endpoint struct {
	addrs    []string
	user     string
	password string
	db       int
	tls      bool
}

// parseURL reads a KCACHE_REMOTE URL. Its errors never repeat the URL's
// user information, however malformed: it may hold a password, and the
// error is logged.
func parseURL(raw string) (endpoint, error) {
	var s endpoint
	scheme, rest, ok := strings.Cut(raw, "://")
	switch {
	case !ok:
		return s, errors.New("want redis://host:port or rediss://host:port")
	case scheme == "rediss":
		s.tls = true
	case scheme == "redis":
	case !isSchemeName(scheme):
		return s, errors.New("unknown scheme: want redis:// or rediss://")
	default:
		return s, fmt.Errorf("unknown scheme %q: want redis:// or rediss://", scheme)
	}
	// The user information is split off by hand, up to the last @, rather
	// than by url.Parse: a password with an unencoded / (base64 makes
	// them) would otherwise end the host part early and land in the path,
	// and from there in an error message. The host part may list several
	// addresses, which url.Parse rejects too.
	auth, hosts := "", rest
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		auth, hosts = rest[:at], rest[at+1:]
	}
	path := ""
	if i := strings.IndexAny(hosts, "/?"); i >= 0 {
		hosts, path = hosts[:i], hosts[i:]
	}
	var err error
	if s.user, s.password, err = parseUserinfo(auth); err != nil {
		return s, err
	}
	u, err := url.Parse("redis://h" + path)
	if err != nil {
		return s, errors.New("malformed database number or parameters")
	}
	for name := range u.Query() {
		if name != "addr" {
			// Other clients' URLs take ?db=, ?password=, ?protocol=...:
			// ignored, the store would use what the user did not mean.
			// The name is not quoted: in a URL missing its @ it may be a
			// password's tail.
			return s, errors.New("unknown parameter: only addr= is read (the database goes in the path, the password before the @)")
		}
	}
	for _, h := range append(strings.Split(hosts, ","), u.Query()["addr"]...) {
		if h = strings.TrimSpace(h); h == "" {
			continue
		}
		a, err := hostPort(h)
		if err != nil {
			return s, err
		}
		s.addrs = append(s.addrs, a)
	}
	if len(s.addrs) == 0 {
		return s, errors.New("no server address")
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		if s.db, err = strconv.Atoi(p); err != nil || s.db < 0 {
			return s, fmt.Errorf("database %q is not a number", p)
		}
	}
	if s.db != 0 && len(s.addrs) > 1 {
		return s, errors.New("a Cluster has no database numbers")
	}
	return s, nil
}

// parseUserinfo decodes user[:password], percent-encoded. Its error says
// what is wrong without quoting either.
func parseUserinfo(auth string) (user, password string, err error) {
	if auth == "" {
		return "", "", nil
	}
	u, p, _ := strings.Cut(auth, ":")
	if user, err = url.PathUnescape(u); err == nil {
		password, err = url.PathUnescape(p)
	}
	if err != nil {
		return "", "", errors.New("malformed user or password: percent-encode % and other reserved characters")
	}
	return user, password, nil
}

// isSchemeName reports whether s is a well-formed URL scheme, which an
// error may quote: a "scheme" holding anything else is more likely part of
// a mistyped URL's user information.
func isSchemeName(s string) bool {
	for i, c := range s {
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}

// hostPort adds Redis' default port to an address without one. Its errors
// quote the host alone: in a URL missing its @, what looks like a port may
// be a password.
func hostPort(h string) (string, error) {
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		host, port = strings.Trim(h, "[]"), "6379"
	}
	if host == "" {
		return "", errors.New("an address has no host")
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", fmt.Errorf("address of host %q has a bad port", host)
	}
	return net.JoinHostPort(host, port), nil
}

// redacted is the URL as it may appear in messages: the password replaced,
// and the whole user information when it has no password (a lone token
// there is more likely a password than a user name).
func redacted(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || !isSchemeName(scheme) {
		return "(malformed)"
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return raw
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		user = "xxxxx"
	} else {
		user += ":xxxxx"
	}
	return scheme + "://" + user + "@" + rest[at+1:]
}

// clientOptions are the go-redis options for s under o. Every wait the
// client does on its own is bounded by o.Timeout, and nothing is retried:
// a retry doubles what a dead server costs a lookup.
func (s endpoint) clientOptions(o *Options) *goredis.UniversalOptions {
	u := &goredis.UniversalOptions{
		Addrs:                 s.addrs,
		Username:              s.user,
		Password:              s.password,
		DB:                    s.db,
		Protocol:              2,
		DisableIdentity:       true,
		MaxRetries:            -1,
		DialTimeout:           o.Timeout,
		DialerRetries:         1,
		PoolTimeout:           o.Timeout,
		ReadTimeout:           o.WriteTimeout,
		WriteTimeout:          o.WriteTimeout,
		ContextTimeoutEnabled: true,
		// A Cluster that moved a slot answers MOVED once; more redirects
		// than that mean a failover in progress, better skipped than
		// waited for.
		MaxRedirects:             2,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
	if s.tls {
		u.Dialer = tlsDialer(o.Timeout * 3 / 4)
	}
	return u
}

// handshakeError is a failed TLS handshake, told apart from other dial
// errors so that the warning can say that TLS is what failed: a client
// speaking TLS to a plain server usually gets no answer at all, and a
// bare timeout would not say why.
type handshakeError struct{ err error }

func (e *handshakeError) Error() string { return "TLS handshake: " + e.err.Error() }
func (e *handshakeError) Unwrap() error { return e.err }

// tlsDialer returns a dialer that connects and does the TLS handshake,
// checking the server's certificate against the system's roots and the
// address's host name (each node of a Cluster by its own). The whole dial
// takes at most limit, less than the lookup waiting for it, so that the
// lookup fails with the handshake's error rather than a bare timeout.
func tlsDialer(limit time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		host, _, _ := net.SplitHostPort(addr)
		tc := tls.Client(c, &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12})
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, &handshakeError{err}
		}
		return tc, nil
	}
}
