package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/kcache/kcache"
	"github.com/spf13/cobra"
)

// settingJSON is one line of `kcache config --json`. Its field names are a
// public interface.
type settingJSON struct {
	Name   string `json:"name"`
	Value  string `json:"value"`  // the value in effect, as the variable would be set to it
	Origin string `json:"origin"` // environment, default, or what the default came from
	Error  string `json:"error,omitempty"`
}

// setting is one variable and how to read its value in effect from a
// configuration.
type setting struct {
	name  string
	value func(c *kcache.Config) string
}

func boolSetting(v bool) string {
	if v {
		return "1"
	}
	return "0"
}

func sizeSetting(n int64) string { return strconv.FormatInt(n, 10) }

func durationSetting(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	return d.String()
}

// settings are the KCACHE_* variables, in the README's order.
var settings = []setting{
	{kcache.EnvDir, func(c *kcache.Config) string { return c.Dir }},
	{kcache.EnvPersistent, func(c *kcache.Config) string { return boolSetting(c.Persistent) }},
	{kcache.EnvInMemory, func(c *kcache.Config) string { return boolSetting(c.InMemory) }},
	{kcache.EnvInMemoryThreshold, func(c *kcache.Config) string { return sizeSetting(c.InMemoryThreshold) }},
	{kcache.EnvMaxSize, func(c *kcache.Config) string { return sizeSetting(c.MaxSize) }},
	{kcache.EnvEvictTo, func(c *kcache.Config) string {
		if c.EvictTo == 0 {
			return "0.5"
		}
		return strconv.FormatFloat(c.EvictTo, 'g', -1, 64)
	}},
	{kcache.EnvBuildWait, func(c *kcache.Config) string {
		if c.BuildWait == 0 {
			return "2m0s"
		}
		return durationSetting(c.BuildWait)
	}},
	{kcache.EnvEvictionDisable, func(c *kcache.Config) string { return boolSetting(c.EvictionDisabled) }},
	{kcache.EnvAgeThreshold, func(c *kcache.Config) string { return durationSetting(c.AgeThreshold) }},
	{kcache.EnvMinImageSize, func(c *kcache.Config) string { return sizeSetting(c.MinImageSize) }},
	{kcache.EnvMaxImageSize, func(c *kcache.Config) string { return sizeSetting(c.MaxImageSize) }},
	{kcache.EnvTrace, func(c *kcache.Config) string { return boolSetting(c.Trace) }},
	{kcache.EnvDebug, func(c *kcache.Config) string { return boolSetting(c.Debug) }},
	{kcache.EnvShared, func(c *kcache.Config) string { return boolSetting(c.Shared) }},
	{kcache.EnvBaseDir, func(c *kcache.Config) string { return c.BaseDir }},
	{kcache.EnvRemote, func(c *kcache.Config) string { return redactedURL(c.Remote) }},
	{kcache.EnvRemoteSecret, func(c *kcache.Config) string {
		if c.RemoteSecret != "" {
			return "(set, hidden)"
		}
		return ""
	}},
	{kcache.EnvRemoteReadOnly, func(c *kcache.Config) string { return boolSetting(c.RemoteReadOnly) }},
	{kcache.EnvRemoteTTL, func(c *kcache.Config) string { return durationSetting(c.RemoteTTL) }},
	{kcache.EnvRemoteTimeout, func(c *kcache.Config) string {
		if c.RemoteTimeout == 0 {
			return "100ms"
		}
		return durationSetting(c.RemoteTimeout)
	}},
}

func newConfigCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "config [--json]",
		Aliases: []string{"env"},
		Short:   "Show the configuration in effect and where each value came from",
		Long: `Show every KCACHE_* variable with the value kcache uses and its origin: the
environment, or the default (for KCACHE_DIR, the variable it was derived
from). A value the environment sets but kcache cannot parse is shown with
its error; the other commands refuse to run until it is fixed. Secrets are
hidden. POCL_KERNEL_CACHE shows whether PoCL's own cache is on for kcache's
commands.`,
		Example: `  kcache config
  kcache config --json | jq -r '.[] | select(.origin == "environment") | .name'`,
		Args: args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runConfig(newStreams(cmd), os.Getenv, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of {name, value, origin}")
	return cmd
}

func runConfig(ios *streams, getenv func(string) string, asJSON bool) error {
	rows, bad := configRows(getenv)
	var err error
	if asJSON {
		err = json.NewEncoder(ios.out).Encode(rows)
	} else {
		err = printConfig(ios, rows)
	}
	if err == nil && bad {
		return exitError{exitFailure}
	}
	return err
}

// configRows returns the settings in effect. A variable that does not
// parse is reported with its error and left out, so that the others
// still show what they would be.
func configRows(getenv func(string) string) (rows []settingJSON, bad bool) {
	errs := map[string]string{}
	for _, s := range settings {
		one := func(k string) string {
			if k == s.name || !strings.HasPrefix(k, "KCACHE_") {
				return getenv(k)
			}
			return ""
		}
		if _, err := kcache.ConfigFromGetenv(one); err != nil && strings.TrimSpace(getenv(s.name)) != "" {
			errs[s.name] = err.Error()
		}
	}
	cfg, err := kcache.ConfigFromGetenv(func(k string) string {
		if errs[k] != "" {
			return ""
		}
		return getenv(k)
	})
	if err != nil { // settings that contradict each other
		return []settingJSON{{Name: "KCACHE_*", Error: err.Error()}}, true
	}
	for _, s := range settings {
		r := settingJSON{Name: s.name, Value: s.value(&cfg), Origin: origin(s.name, getenv)}
		if e := errs[s.name]; e != "" {
			r.Value, r.Error, bad = shownEnv(s.name, getenv(s.name)), e, true
		}
		rows = append(rows, r)
	}
	return append(rows, poclRow()), bad
}

// origin says where a variable's value came from.
func origin(name string, getenv func(string) string) string {
	switch {
	case strings.TrimSpace(getenv(name)) != "":
		return "environment"
	case name != kcache.EnvDir:
		return "default"
	case strings.HasPrefix(getenv("XDG_CACHE_HOME"), "/"):
		return "default, from XDG_CACHE_HOME"
	case strings.HasPrefix(getenv("HOME"), "/"):
		return "default, from HOME"
	}
	return "default: none, as neither XDG_CACHE_HOME nor HOME is an absolute path"
}

// shownEnv is a variable's raw value as config shows it: never a secret.
func shownEnv(name, v string) string {
	switch name {
	case kcache.EnvRemoteSecret:
		return "(set, hidden)"
	case kcache.EnvRemote:
		return redactedURL(v)
	}
	return v
}

// poclRow is PoCL's kernel cache setting as kcache's commands run with it
// (see keepPoCLCacheOff).
func poclRow() settingJSON {
	r := settingJSON{Name: "POCL_KERNEL_CACHE", Value: os.Getenv("POCL_KERNEL_CACHE"), Origin: "environment"}
	if !poclCacheSetByUser {
		r.Origin = "kcache's commands turn PoCL's own cache off"
	}
	return r
}

func printConfig(ios *streams, rows []settingJSON) error {
	w := tabwriter.NewWriter(ios.out, 0, 4, 2, ' ', 0)
	if ios.tty {
		fmt.Fprintln(w, "VARIABLE\tVALUE\tORIGIN")
	}
	for _, r := range rows {
		v := r.Value
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 1024 && ios.tty {
			v += " (" + humanize.IBytes(uint64(n)) + ")"
		}
		if v == "" {
			v = "-"
		}
		o := r.Origin
		if r.Error != "" {
			o = "environment, invalid: " + r.Error
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", r.Name, v, o)
	}
	return w.Flush()
}

// redactedURL is a remote URL without its password. Only a URL with a
// host can say where its password is; anything else might be one.
func redactedURL(v string) string {
	if v == "" {
		return ""
	}
	if u, err := url.Parse(strings.TrimSpace(v)); err == nil && u.Host != "" {
		return u.Redacted()
	}
	return "(hidden: not a URL with a host)"
}
