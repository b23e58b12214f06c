package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadOnlyCommandsCreateNothing runs every command that only reads
// the cache with HOME naming a directory that does not exist, as
// HOME=/nonexistent does: each answers as for an empty cache (or says
// there is none) and creates nothing.
func TestReadOnlyCommandsCreateNothing(t *testing.T) {
	kernel := writeKernel(t, t.TempDir())
	tests := []struct {
		args   []string
		code   int
		opencl bool // needs a device
	}{
		{[]string{"stats"}, 0, false},
		{[]string{"stats", "--json"}, 0, false},
		{[]string{"ls"}, 0, false},
		{[]string{"ls", "--json"}, 0, false},
		{[]string{"verify"}, 0, false},
		{[]string{"show", "abc"}, 1, false},
		{[]string{"diff", "ab", "cd"}, 1, false},
		{[]string{"export", filepath.Join(t.TempDir(), "b.tar.zst")}, 1, false},
		{[]string{"__complete", "show", "a"}, 0, false},
		{[]string{"why", kernel}, 0, true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			if tt.opencl {
				requireOpenCL(t)
			}
			home := filepath.Join(t.TempDir(), "nonexistent")
			r := runCmd(t, homeless(kcacheCmd(t, t.TempDir(), tt.args...), home))
			if r.code != tt.code {
				t.Errorf("exit %d, want %d\n%s%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if _, err := os.Stat(home); err == nil {
				t.Errorf("%s was created", home)
			}
		})
	}
}

// homeless runs cmd with HOME set to home and no KCACHE_DIR or
// XDG_CACHE_HOME, so that the cache is the default one under home.
func homeless(cmd *exec.Cmd, home string) *exec.Cmd {
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool {
		return strings.HasPrefix(kv, "KCACHE_DIR=") || strings.HasPrefix(kv, "XDG_CACHE_HOME=") || strings.HasPrefix(kv, "HOME=")
	})
	cmd.Env = append(cmd.Env, "HOME="+home)
	return cmd
}

// TestOwnershipRuleExplained: a cache directory writable by others, or
// owned by another user (a container image pre-warmed as root, used as
// another), is refused with the rule and the ways out.
func TestOwnershipRuleExplained(t *testing.T) {
	shared := filepath.Join(t.TempDir(), "shared")
	os.Mkdir(shared, 0o775)
	os.Chmod(shared, 0o775) // past the umask
	dirs := map[string]string{"group-writable": shared}
	fixes := map[string]string{"group-writable": "chmod -R go-w", "another user's": "chown -R"}
	if os.Geteuid() == 0 {
		other := filepath.Join(t.TempDir(), "other")
		os.Mkdir(other, 0o700)
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		dirs["another user's"] = other
	}
	for name, dir := range dirs {
		cmd := kcacheCmd(t, t.TempDir(), "stats")
		cmd.Env = append(cmd.Env, "KCACHE_DIR="+dir)
		r := runCmd(t, cmd)
		if r.code != 1 || !strings.Contains(r.stderr, "must belong to you and be writable by you alone") ||
			!strings.Contains(r.stderr, fixes[name]) || !strings.Contains(r.stderr, "KCACHE_DIR") {
			t.Errorf("%s: exit %d, stderr %q", name, r.code, r.stderr)
		}
	}
}
