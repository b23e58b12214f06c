package kcache

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is kcache's configuration. ConfigFromEnv reads it from KCACHE_*
// variables; Options given to Open override what the environment says.
type Config struct {
	// Dir is the persistent cache's root directory. Empty means no
	// persistent tier could be placed (no KCACHE_DIR, XDG_CACHE_HOME or HOME).
	Dir string
	// Persistent enables the on-disk tier.
	Persistent bool
	// InMemory enables the in-process object tier.
	InMemory bool
	// InMemoryThreshold is the in-process tier's size in bytes above which
	// least recently used entries are evicted; 0 disables eviction.
	InMemoryThreshold int64
	// MaxSize is the persistent tier's size in bytes above which least
	// recently used entries are evicted; 0 disables size-based eviction.
	MaxSize int64
	// EvictTo is the fraction of MaxSize that size-based eviction goes
	// down to once it starts; 0 means the store's default (one half).
	EvictTo float64
	// EvictionDisabled turns every kind of persistent eviction off.
	EvictionDisabled bool
	// AgeThreshold evicts persistent entries unused for longer; 0 disables
	// age-based eviction.
	AgeThreshold time.Duration
	// MinImageSize is the smallest device image worth a disk entry: for tiny
	// images a compile can cost less than the file system round trip.
	MinImageSize int64
	// MaxImageSize is the largest device image kept on disk, so a few huge
	// builds cannot flush the rest of the cache.
	MaxImageSize int64
	// BuildWait bounds how long a process waits for another process's
	// build of the same key before building itself; 0 means the store's
	// default.
	BuildWait time.Duration
	// Trace logs, at debug level, every key component as it is hashed, to
	// explain why a lookup missed.
	Trace bool
	// Debug logs every tier decision at debug level.
	Debug bool
	// BaseDir, when set, makes keys name the places under it relative to
	// it, so checkouts in different places share entries (ccache's
	// base_dir), where that is exact (see deps.RelocateArgs).
	BaseDir string
	// Shared makes the persistent cache its group's as well as its
	// user's (see disk.Options.Shared).
	Shared bool
	// Remote is the URL of the fleet's remote tier (redis://, rediss://);
	// empty means none.
	Remote string
	// RemoteSecret, when set, signs every remote value and rejects values
	// not signed with it.
	RemoteSecret string
	// RemoteReadOnly makes this process read the remote tier without ever
	// writing it: for clients not trusted to publish binaries.
	RemoteReadOnly bool
	// RemoteTTL is how long a remote entry lives after its last write or
	// hit; 0 leaves entries to the server's eviction policy.
	RemoteTTL time.Duration
	// RemoteTimeout bounds each remote lookup; 0 means the remote store's
	// default.
	RemoteTimeout time.Duration
}

// Defaults, as in the systems kcache replaces. The persistent tier is on by
// default: that is kcache's reason to exist, unlike the SYCL runtime where it
// is opt-in.
const (
	DefaultMaxSize      = 8 << 30            // 8 GiB, the SYCL runtime's default
	DefaultAgeThreshold = 7 * 24 * time.Hour // a week, the SYCL runtime's default
	DefaultMaxImageSize = 1 << 30            // 1 GiB, the SYCL runtime's default
)

// Environment variable names. They are a public interface: scripts set them.
const (
	EnvDir               = "KCACHE_DIR"
	EnvPersistent        = "KCACHE_PERSISTENT"
	EnvInMemory          = "KCACHE_IN_MEM"
	EnvInMemoryThreshold = "KCACHE_IN_MEM_EVICTION_THRESHOLD"
	EnvMaxSize           = "KCACHE_MAX_SIZE"
	EnvEvictTo           = "KCACHE_EVICT_TO"
	EnvBuildWait         = "KCACHE_BUILD_WAIT"
	EnvEvictionDisable   = "KCACHE_EVICTION_DISABLE"
	EnvAgeThreshold      = "KCACHE_THRESHOLD"
	EnvMinImageSize      = "KCACHE_MIN_IMAGE_SIZE"
	EnvMaxImageSize      = "KCACHE_MAX_IMAGE_SIZE"
	EnvTrace             = "KCACHE_TRACE"
	EnvDebug             = "KCACHE_DEBUG"
	EnvShared            = "KCACHE_SHARED"
	EnvBaseDir           = "KCACHE_BASE_DIR"
	EnvRemote            = "KCACHE_REMOTE"
	EnvRemoteSecret      = "KCACHE_REMOTE_SECRET"
	EnvRemoteReadOnly    = "KCACHE_REMOTE_READONLY"
	EnvRemoteTTL         = "KCACHE_REMOTE_TTL"
	EnvRemoteTimeout     = "KCACHE_REMOTE_TIMEOUT"
)

// DefaultConfig returns the configuration used when no variable is set,
// with the directory derived from XDG_CACHE_HOME or HOME in getenv.
func DefaultConfig(getenv func(string) string) Config {
	return Config{
		Dir:          defaultDir(getenv),
		Persistent:   true,
		InMemory:     true,
		MaxSize:      DefaultMaxSize,
		AgeThreshold: DefaultAgeThreshold,
		MaxImageSize: DefaultMaxImageSize,
	}
}

func defaultDir(getenv func(string) string) string {
	if x := getenv("XDG_CACHE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "kcache")
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".cache", "kcache")
	}
	return ""
}

// ConfigFromEnv reads the configuration from the process environment.
func ConfigFromEnv() (Config, error) { return ConfigFromGetenv(os.Getenv) }

// LoadConfig reads the configuration from the environment, then applies
// overrides in order: settings made in code win over the environment.
func LoadConfig(overrides ...func(*Config)) (Config, error) {
	c, err := ConfigFromEnv()
	if err != nil {
		return Config{}, err
	}
	for _, o := range overrides {
		o(&c)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// ConfigFromGetenv reads the configuration through getenv, which lets tests
// and embedders supply their own environment. An unset or empty variable
// keeps its default; an unparsable one is an error naming the variable and
// its value, never a silent default.
func ConfigFromGetenv(getenv func(string) string) (Config, error) {
	c := DefaultConfig(getenv)
	var errs []error
	set := func(name string, parse func(string) error) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		if err := parse(v); err != nil {
			errs = append(errs, fmt.Errorf("kcache: %s=%q: %w", name, shownValue(name, getenv(name)), err))
		}
	}
	set(EnvDir, func(v string) error {
		if !filepath.IsAbs(v) {
			return errors.New("must be an absolute path")
		}
		c.Dir = filepath.Clean(v)
		return nil
	})
	set(EnvPersistent, boolInto(&c.Persistent))
	set(EnvInMemory, boolInto(&c.InMemory))
	set(EnvInMemoryThreshold, sizeInto(&c.InMemoryThreshold))
	set(EnvMaxSize, sizeInto(&c.MaxSize))
	set(EnvEvictTo, fractionInto(&c.EvictTo))
	set(EnvEvictionDisable, boolInto(&c.EvictionDisabled))
	set(EnvBuildWait, durationInto(&c.BuildWait))
	set(EnvAgeThreshold, durationInto(&c.AgeThreshold))
	set(EnvMinImageSize, sizeInto(&c.MinImageSize))
	set(EnvMaxImageSize, sizeInto(&c.MaxImageSize))
	set(EnvTrace, boolInto(&c.Trace))
	set(EnvDebug, boolInto(&c.Debug))
	set(EnvShared, boolInto(&c.Shared))
	set(EnvBaseDir, func(v string) error {
		if v != "" && !filepath.IsAbs(v) {
			return fmt.Errorf("%s=%q: not an absolute directory", EnvBaseDir, v)
		}
		c.BaseDir = v
		return nil
	})
	set(EnvRemote, remoteInto(&c.Remote))
	set(EnvRemoteSecret, func(v string) error { c.RemoteSecret = v; return nil })
	set(EnvRemoteReadOnly, boolInto(&c.RemoteReadOnly))
	set(EnvRemoteTTL, durationInto(&c.RemoteTTL))
	set(EnvRemoteTimeout, durationInto(&c.RemoteTimeout))
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate reports settings out of range, such as settings made in code
// that no environment variable would be accepted with, and settings that
// contradict each other. Each error names the variable the setting
// corresponds to.
func (c *Config) Validate() error {
	var errs []error
	for _, f := range []struct {
		env, field string
		v          int64
	}{
		{EnvInMemoryThreshold, "InMemoryThreshold", c.InMemoryThreshold},
		{EnvMaxSize, "MaxSize", c.MaxSize},
		{EnvMinImageSize, "MinImageSize", c.MinImageSize},
		{EnvMaxImageSize, "MaxImageSize", c.MaxImageSize},
		{EnvAgeThreshold, "AgeThreshold", int64(c.AgeThreshold)},
		{EnvBuildWait, "BuildWait", int64(c.BuildWait)},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("kcache: %s (Config.%s) is negative: %d", f.env, f.field, f.v))
		}
	}
	// Written so that NaN fails: every comparison with NaN is false.
	if c.EvictTo != 0 && !(c.EvictTo > 0 && c.EvictTo <= 1) {
		errs = append(errs, fmt.Errorf("kcache: %s (Config.EvictTo) is %v: want a fraction in (0, 1], or 0 for the default", EnvEvictTo, c.EvictTo))
	}
	if c.MaxImageSize > 0 && c.MinImageSize > c.MaxImageSize {
		errs = append(errs, fmt.Errorf("kcache: %s %d exceeds %s %d", EnvMinImageSize, c.MinImageSize, EnvMaxImageSize, c.MaxImageSize))
	}
	if c.Dir != "" && !filepath.IsAbs(c.Dir) {
		errs = append(errs, fmt.Errorf("kcache: %s: cache directory %q is not absolute", EnvDir, c.Dir))
	}
	return errors.Join(errs...)
}

// ParseBool accepts 1/0, true/false, yes/no and on/off, in any case.
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off":
		return false, nil
	}
	return false, errors.New("want 1/0, true/false, yes/no or on/off")
}

// ParseSize parses a byte size: a plain number of bytes, or a number with a
// unit, SI ("500MB", "8G" = 8*10^9) or binary ("512MiB", "8GiB" = 8*2^30).
// It accepts sizes from 0 to 2^62 bytes, and no size that is not zero but
// comes to less than a byte ("0.5"): that one would turn a limit off.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	n, err := parseBytes(s)
	if err != nil {
		return 0, errors.New("want a size such as 4096, 512MiB or 8G")
	}
	if n > 1<<62 {
		return 0, errors.New("size too large")
	}
	if n == 0 && strings.ContainsAny(s, "123456789") {
		return 0, errors.New("size less than a byte")
	}
	return int64(n), nil
}

// parseBytes reads a number of bytes as go-humanize's ParseBytes does
// (FuzzParseBytesAsHumanize holds the two to the same answers): digits,
// dots and thousands commas, then a unit from byteUnits, case and blanks
// aside. It is kept here because that package's initialisation (its
// other parsers' regular expression and big-number tables) cost every
// process, the layer's in applications included, a millisecond at start.
func parseBytes(s string) (uint64, error) {
	end := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' && r != ',' })
	if end < 0 {
		end = len(s)
	}
	num := strings.ReplaceAll(s[:end], ",", "")
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, err
	}
	unit := strings.ToLower(strings.TrimSpace(s[end:]))
	m, ok := byteUnits[unit]
	if !ok {
		return 0, fmt.Errorf("unknown size unit %q", unit)
	}
	if !strings.Contains(num, ".") {
		// A whole number is read exactly: a float64 is not, above 2^53.
		if v, err := strconv.ParseUint(num, 10, 64); err == nil {
			if hi, lo := bits.Mul64(v, m); hi == 0 {
				return lo, nil
			}
			return 0, fmt.Errorf("size too large: %s", s)
		}
	}
	if f *= float64(m); f >= math.MaxUint64 {
		return 0, fmt.Errorf("size too large: %s", s)
	}
	return uint64(f), nil
}

// byteUnits are the units parseBytes knows, lower case: SI (k = 1000)
// and binary (ki = 1024), with or without their "b".
var byteUnits = map[string]uint64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "ki": 1 << 10, "kib": 1 << 10,
	"m": 1e6, "mb": 1e6, "mi": 1 << 20, "mib": 1 << 20,
	"g": 1e9, "gb": 1e9, "gi": 1 << 30, "gib": 1 << 30,
	"t": 1e12, "tb": 1e12, "ti": 1 << 40, "tib": 1 << 40,
	"p": 1e15, "pb": 1e15, "pi": 1 << 50, "pib": 1 << 50,
	"e": 1e18, "eb": 1e18, "ei": 1 << 60, "eib": 1 << 60,
}

// maxAge bounds ParseAge's days, well within time.Duration's range of 292
// years.
const maxAge = 100 * 365 * 24 * time.Hour

// ParseAge parses a duration as time.ParseDuration does ("36h", "90m"), and
// also whole or fractional days ("7d", "1.5d"). "0" means off. It accepts
// no negative, NaN or infinite duration.
func ParseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		f, err := strconv.ParseFloat(days, 64)
		// Written so that NaN fails: every comparison with NaN is false.
		if err != nil || !(f >= 0 && f*float64(24*time.Hour) <= float64(maxAge)) {
			return 0, errors.New("want a duration such as 7d, 36h or 90m, up to 100 years")
		}
		return time.Duration(f * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, errors.New("want a duration such as 7d, 36h or 90m")
	}
	return d, nil
}

// ParseFraction parses a fraction in (0, 1], as a number ("0.5") or a
// percentage ("50%"). NaN and infinities are refused.
func ParseFraction(s string) (float64, error) {
	s = strings.TrimSpace(s)
	scale := 1.0
	if p, ok := strings.CutSuffix(s, "%"); ok {
		s, scale = p, 100
	}
	f, err := strconv.ParseFloat(s, 64)
	f /= scale
	// Written so that NaN fails: every comparison with NaN is false.
	if err != nil || !(f > 0 && f <= 1) {
		return 0, errors.New("want a fraction in (0, 1] such as 0.5 or 50%")
	}
	return f, nil
}

// remoteInto accepts the URL schemes of the remote tiers. The URL itself
// is parsed by the tier, which knows its options.
// shownValue is a variable's value as an error prints it: never the
// remote secret, and never the password of a remote URL, which errors
// reach logs with.
func shownValue(name, v string) string {
	switch name {
	case EnvRemoteSecret, EnvRemote:
		// A URL that failed to parse cannot say where its password is
		// ("redis://user:/pw@host" reads as host "user:" and path
		// "/pw@host"), so no part of it is shown.
		return "(hidden)"
	}
	return v
}

func remoteInto(dst *string) func(string) error {
	return func(v string) error {
		if !strings.HasPrefix(v, "redis://") && !strings.HasPrefix(v, "rediss://") {
			return errors.New("want a redis:// or rediss:// URL")
		}
		*dst = v
		return nil
	}
}

func fractionInto(dst *float64) func(string) error {
	return func(v string) (err error) { *dst, err = ParseFraction(v); return err }
}

func boolInto(dst *bool) func(string) error {
	return func(v string) (err error) { *dst, err = ParseBool(v); return err }
}

func sizeInto(dst *int64) func(string) error {
	return func(v string) (err error) { *dst, err = ParseSize(v); return err }
}

func durationInto(dst *time.Duration) func(string) error {
	return func(v string) (err error) { *dst, err = ParseAge(v); return err }
}
