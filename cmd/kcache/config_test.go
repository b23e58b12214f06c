package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestConfigShowsOrigins runs kcache config as a user checking their
// set-up: every variable with the value in effect and where it came from,
// secrets hidden, a bad value named with its error (exit 1), nothing
// created.
func TestConfigShowsOrigins(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	cmd := homeless(kcacheCmd(t, t.TempDir(), "config", "--json"), home)
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "POCL_KERNEL_CACHE=") })
	cmd.Env = append(cmd.Env, "KCACHE_MAX_SIZE=2G", "KCACHE_REMOTE=redis://user:pw@cache:6379", "KCACHE_REMOTE_SECRET=s3cret")
	r := runCmd(t, cmd)
	var rows []settingJSON
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || r.code != 0 {
		t.Fatalf("exit %d, %v: %q\n%s", r.code, err, r.stdout, r.stderr)
	}
	got := map[string]settingJSON{}
	for _, row := range rows {
		got[row.Name] = row
	}
	want := map[string]settingJSON{
		"KCACHE_DIR":           {Value: filepath.Join(home, ".cache", "kcache"), Origin: "default, from HOME"},
		"KCACHE_MAX_SIZE":      {Value: "2000000000", Origin: "environment"},
		"KCACHE_PERSISTENT":    {Value: "1", Origin: "default"},
		"KCACHE_THRESHOLD":     {Value: "168h0m0s", Origin: "default"},
		"KCACHE_REMOTE":        {Value: "redis://user:xxxxx@cache:6379", Origin: "environment"},
		"KCACHE_REMOTE_SECRET": {Value: "(set, hidden)", Origin: "environment"},
		"POCL_KERNEL_CACHE":    {Value: "0", Origin: "kcache's commands turn PoCL's own cache off"},
	}
	for name, w := range want {
		w.Name = name
		if got[name] != w {
			t.Errorf("%s: %+v, want %+v", name, got[name], w)
		}
	}
	if len(rows) != len(settings)+1 || strings.Contains(r.stdout, "s3cret") || strings.Contains(r.stdout, ":pw@") {
		t.Errorf("%d rows, or a secret shown: %s", len(rows), r.stdout)
	}
	if _, err := os.Stat(home); err == nil {
		t.Errorf("config created %s", home)
	}

	cmd = kcacheCmd(t, t.TempDir(), "config")
	cmd.Env = append(cmd.Env, "KCACHE_THRESHOLD=soon")
	r = runCmd(t, cmd)
	if r.code != 1 || !strings.Contains(r.stdout, `KCACHE_THRESHOLD`) || !strings.Contains(r.stdout, `invalid: kcache: KCACHE_THRESHOLD="soon"`) ||
		!strings.Contains(r.stdout, "KCACHE_MAX_SIZE") {
		t.Errorf("bad value: exit %d\n%s", r.code, r.stdout)
	}
	out, code := onTerminal(t, t.TempDir(), nil, "config")
	if code != 0 || !strings.HasPrefix(out, "VARIABLE ") || !strings.Contains(out, "8589934592 (8.0 GiB)") {
		t.Errorf("on a terminal: exit %d\n%s", code, out)
	}
}
