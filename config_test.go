package kcache

import (
	"math"
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestConfigDefaults(t *testing.T) {
	c, err := ConfigFromGetenv(envOf(map[string]string{"HOME": "/home/u"}))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Dir: "/home/u/.cache/kcache", Persistent: true, InMemory: true,
		MaxSize: 8 << 30, AgeThreshold: 7 * 24 * time.Hour, MaxImageSize: 1 << 30}
	if c != want {
		t.Errorf("defaults = %+v, want %+v", c, want)
	}
}

func TestConfigDir(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HOME": "/h", "XDG_CACHE_HOME": "/x"}, "/x/kcache"},
		{map[string]string{"HOME": "/h", "XDG_CACHE_HOME": "relative"}, "/h/.cache/kcache"},
		{map[string]string{"HOME": "/h", "KCACHE_DIR": "/d/"}, "/d"},
		{map[string]string{}, ""},
	}
	for _, tt := range tests {
		c, err := ConfigFromGetenv(envOf(tt.env))
		if err != nil {
			t.Fatal(err)
		}
		if c.Dir != tt.want {
			t.Errorf("%v: Dir = %q, want %q", tt.env, c.Dir, tt.want)
		}
	}
}

func TestConfigValues(t *testing.T) {
	env := map[string]string{
		"KCACHE_PERSISTENT": "0", "KCACHE_IN_MEM": "off",
		"KCACHE_IN_MEM_EVICTION_THRESHOLD": "512MiB", "KCACHE_MAX_SIZE": "8G",
		"KCACHE_EVICTION_DISABLE": "yes", "KCACHE_THRESHOLD": "36h",
		"KCACHE_MIN_IMAGE_SIZE": "1k", "KCACHE_MAX_IMAGE_SIZE": "4096",
		"KCACHE_TRACE": "TRUE", "KCACHE_DEBUG": "1", "KCACHE_EVICT_TO": "25%", "KCACHE_BUILD_WAIT": "5m",
	}
	c, err := ConfigFromGetenv(envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{InMemoryThreshold: 512 << 20, MaxSize: 8e9, EvictionDisabled: true,
		AgeThreshold: 36 * time.Hour, MinImageSize: 1000, MaxImageSize: 4096, Trace: true, Debug: true,
		EvictTo: 0.25, BuildWait: 5 * time.Minute}
	if c != want {
		t.Errorf("got %+v\nwant %+v", c, want)
	}
}

func TestParseAge(t *testing.T) {
	tests := map[string]time.Duration{"7d": 7 * 24 * time.Hour, "1.5d": 36 * time.Hour, "90m": 90 * time.Minute, "0": 0, "0d": 0}
	for in, want := range tests {
		got, err := ParseAge(in)
		if err != nil || got != want {
			t.Errorf("ParseAge(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

// TestConfigRejectsEveryBadValue checks that each variable refuses garbage
// with an error naming the variable and the value.
func TestConfigRejectsEveryBadValue(t *testing.T) {
	bad := map[string][]string{
		EnvDir:               {"relative/path", "./x"},
		EnvPersistent:        {"2", "maybe", "-1"},
		EnvInMemory:          {"enabled"},
		EnvInMemoryThreshold: {"-5", "lots", "12XB", "1.5.5G", "NaN", "Inf", "0.5"},
		EnvMaxSize:           {"-1", "8 gigs", "0x10", "NaN", "+Inf", "-Inf", "1e400", "0.2B", "99999999999999999999"},
		EnvEvictionDisable:   {"please"},
		EnvAgeThreshold:      {"7", "-1h", "week", "d", "-2d", "1e9d", "NaNd", "nand", "Infd", "-Infd", "+Infd", "NaN", "Inf"},
		EnvMinImageSize:      {"small"},
		EnvMaxImageSize:      {"big"},
		EnvTrace:             {"verbose"},
		EnvDebug:             {"11"},
		EnvEvictTo:           {"0", "1.5", "150%", "half", "-0.5", "NaN", "nan", "-NaN", "NaN%", "Inf", "+Inf", "-Inf", "infinity", "Inf%", "1e400", "-0"},
		EnvBuildWait:         {"soon", "-1m", "NaNd", "Infd", "NaN", "-1d"},
	}
	for name, values := range bad {
		for _, v := range values {
			_, err := ConfigFromGetenv(envOf(map[string]string{"HOME": "/h", name: v}))
			if err == nil {
				t.Errorf("%s=%q accepted", name, v)
				continue
			}
			if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), v) {
				t.Errorf("%s=%q: error %q does not name the variable and value", name, v, err)
			}
		}
	}
}

// TestValidateRejectsCodeSettings checks that settings made in code are held
// to the ranges the environment's parsers enforce, each error naming the
// variable.
func TestValidateRejectsCodeSettings(t *testing.T) {
	tests := []struct {
		env string
		set func(*Config)
	}{
		{EnvEvictTo, func(c *Config) { c.EvictTo = math.NaN() }},
		{EnvEvictTo, func(c *Config) { c.EvictTo = math.Inf(1) }},
		{EnvEvictTo, func(c *Config) { c.EvictTo = math.Inf(-1) }},
		{EnvEvictTo, func(c *Config) { c.EvictTo = 1.5 }},
		{EnvEvictTo, func(c *Config) { c.EvictTo = -0.5 }},
		{EnvMaxSize, func(c *Config) { c.MaxSize = -1 }},
		{EnvInMemoryThreshold, func(c *Config) { c.InMemoryThreshold = -1 }},
		{EnvMinImageSize, func(c *Config) { c.MinImageSize = -1 }},
		{EnvMaxImageSize, func(c *Config) { c.MaxImageSize = -1 }},
		{EnvAgeThreshold, func(c *Config) { c.AgeThreshold = -time.Hour }},
		{EnvBuildWait, func(c *Config) { c.BuildWait = -time.Second }},
		{EnvDir, func(c *Config) { c.Dir = "relative" }},
	}
	for _, tt := range tests {
		c := DefaultConfig(envOf(map[string]string{"HOME": "/h"}))
		tt.set(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.env) {
			t.Errorf("%+v: error %v does not name %s", c, err, tt.env)
		}
		t.Setenv("HOME", "/h")
		if _, err := LoadConfig(tt.set); err == nil {
			t.Errorf("LoadConfig accepted %+v", c)
		}
	}
	c := DefaultConfig(envOf(nil))
	c.EvictTo = 1
	if err := c.Validate(); err != nil {
		t.Errorf("EvictTo 1 refused: %v", err)
	}
}

func TestConfigContradiction(t *testing.T) {
	_, err := ConfigFromGetenv(envOf(map[string]string{"KCACHE_MIN_IMAGE_SIZE": "2M", "KCACHE_MAX_IMAGE_SIZE": "1M"}))
	if err == nil {
		t.Error("minimum above maximum accepted")
	}
}

func TestConfigReportsAllErrors(t *testing.T) {
	_, err := ConfigFromGetenv(envOf(map[string]string{EnvDebug: "x", EnvTrace: "y"}))
	if err == nil || !strings.Contains(err.Error(), EnvDebug) || !strings.Contains(err.Error(), EnvTrace) {
		t.Errorf("want both variables named, got %v", err)
	}
}

// TestConfigErrorHidesSecrets: an error about KCACHE_REMOTE names the
// variable and what is wrong, but never prints a password.
func TestConfigErrorHidesSecrets(t *testing.T) {
	for _, v := range []string{"http://user:hunter2@cache:6379", "user:hunter2@cache", "%zz:hunter2", "REDIS://user:/hunter2@host/0"} {
		_, err := ConfigFromGetenv(envOf(map[string]string{EnvRemote: v}))
		if err == nil || !strings.Contains(err.Error(), EnvRemote) {
			t.Fatalf("%q: want an error naming %s, got %v", v, EnvRemote, err)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: the error prints the password: %v", v, err)
		}
	}
}

func TestLoadConfigOverridesEnvironment(t *testing.T) {
	t.Setenv(EnvMaxSize, "1G")
	t.Setenv(EnvPersistent, "1")
	c, err := LoadConfig(func(c *Config) { c.MaxSize = 42; c.Persistent = false })
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxSize != 42 || c.Persistent {
		t.Errorf("code overrides lost: %+v", c)
	}
	t.Setenv(EnvMaxSize, "huge")
	if _, err := LoadConfig(); err == nil {
		t.Error("bad environment accepted")
	}
}
