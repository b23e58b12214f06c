package kcache

import (
	"math"
	"strings"
	"testing"

	"github.com/dustin/go-humanize"
)

// The config fuzzers feed each parser arbitrary text and check what an
// accepted value may be: finite and within the parser's range. Their seeds
// run as ordinary tests; go test -fuzz=FuzzParseSize (and so on) explores.

// seedValues are the seeds of every config fuzzer: values each variable
// accepts, values that showed defects (NaN turned size-based disk eviction
// into "evict everything"), and edges of every range.
var seedValues = []string{
	"", "0", "1", "-1", "0.5", "50%", "100%", "0%", "150%", "1.5", "-0", "+0", "-0.5",
	"NaN", "nan", "-NaN", "NaN%", "NaNd", "Inf", "+Inf", "-Inf", "infinity", "Inf%", "Infd", "-Infd",
	"1e400", "1e-400", "0x1p-2", "4096", "512MiB", "8G", "8GiB", "0.2B", "1,000", "99999999999999999999",
	"16EiB", "4EiB", "7d", "1.5d", "36h", "90m", "-1h", "2562047h", "36500d", "36501d", "1e9d",
	"true", "False", "yes", "off", "on", " 1 ", "2", "\u0663",
}

func FuzzParseSize(f *testing.F) {
	for _, s := range seedValues {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 || n > 1<<62 {
			t.Fatalf("ParseSize(%q) = %d, outside [0, 2^62]", s, n)
		}
	})
}

func FuzzParseAge(f *testing.F) {
	for _, s := range seedValues {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseAge(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("ParseAge(%q) = %v, negative", s, d)
		}
		if strings.HasSuffix(strings.TrimSpace(s), "d") && d > maxAge {
			t.Fatalf("ParseAge(%q) = %v, beyond %v", s, d, maxAge)
		}
	})
}

func FuzzParseFraction(f *testing.F) {
	for _, s := range seedValues {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseFraction(s)
		if err != nil {
			return
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || v > 1 {
			t.Fatalf("ParseFraction(%q) = %v, outside (0, 1]", s, v)
		}
	})
}

func FuzzParseBool(f *testing.F) {
	for _, s := range seedValues {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseBool(s)
		if err != nil {
			return
		}
		want := map[string]bool{"1": true, "true": true, "yes": true, "on": true,
			"0": false, "false": false, "no": false, "off": false}
		w, ok := want[strings.ToLower(strings.TrimSpace(s))]
		if !ok || v != w {
			t.Fatalf("ParseBool(%q) = %v, want an error or %v", s, v, w)
		}
	})
}

// FuzzConfigFromGetenv sets every variable at once, to one fuzzed value
// (durations such as KCACHE_BUILD_WAIT included), and checks that a
// configuration accepted as a whole is one Validate accepts and holds only
// values in range.
func FuzzConfigFromGetenv(f *testing.F) {
	for _, s := range seedValues {
		f.Add(s, "")
		f.Add(s, EnvEvictTo)
	}
	vars := []string{EnvPersistent, EnvInMemory, EnvInMemoryThreshold, EnvMaxSize, EnvEvictTo,
		EnvBuildWait, EnvEvictionDisable, EnvAgeThreshold, EnvMinImageSize, EnvMaxImageSize, EnvTrace, EnvDebug}
	f.Fuzz(func(t *testing.T, value, only string) {
		c, err := ConfigFromGetenv(func(name string) string {
			if name == "HOME" {
				return "/h"
			}
			if only == "" || only == name {
				for _, v := range vars {
					if v == name {
						return value
					}
				}
			}
			return ""
		})
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("%q accepted, yet Validate says %v", value, err)
		}
		for _, n := range []int64{c.InMemoryThreshold, c.MaxSize, c.MinImageSize, c.MaxImageSize} {
			if n < 0 || n > 1<<62 {
				t.Fatalf("%q: size %d out of range: %+v", value, n, c)
			}
		}
		if c.AgeThreshold < 0 || c.BuildWait < 0 {
			t.Fatalf("%q: negative duration: %+v", value, c)
		}
		if math.IsNaN(c.EvictTo) || math.IsInf(c.EvictTo, 0) || c.EvictTo < 0 || c.EvictTo > 1 {
			t.Fatalf("%q: EvictTo %v out of range", value, c.EvictTo)
		}
	})
}

// FuzzParseBytesAsHumanize holds parseBytes to go-humanize's ParseBytes,
// which it replaces: the same size, or an error from both.
func FuzzParseBytesAsHumanize(f *testing.F) {
	for _, s := range seedValues {
		f.Add(s)
	}
	for _, s := range []string{"1.5 GB", "2 kib", "1,024KiB", "5\u00a0MB", "1.2.3", ".5k", "5.", "18446744073709551615", "18446744073709551616", "16 ei", "17EB", "1e3", "1\u0663", "3 zb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseBytes(s)
		want, werr := humanize.ParseBytes(s)
		if (err != nil) != (werr != nil) || got != want {
			t.Fatalf("parseBytes(%q) = %d, %v; go-humanize gives %d, %v", s, got, err, want, werr)
		}
	})
}
