package opencl

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/internal/keyparts"
)

// TestPoCLDirFromDeviceInit: PoCL takes its temporary directory, the first
// place it searches for the program's quoted includes, from the
// environment of its device init, and keeps it: POCL_CACHE_DIR set later
// moves the key's first place and not PoCL's, and a header created in
// PoCL's own directory was then keyed by no one.
func TestPoCLDirFromDeviceInit(t *testing.T) {
	testFixture(t) // PoCL started
	pocl := keyparts.PoCLTempDir(lookupIn(deviceInitEnv()))
	if err := os.MkdirAll(pocl, 0o700); err != nil {
		t.Fatal(err)
	}
	wd := t.TempDir()
	t.Chdir(wd)
	writeFile(t, filepath.Join(wd, "scale.h"), "#define SCALE 1.0f\n", time.Hour)
	t.Setenv("POCL_CACHE_DIR", t.TempDir()) // too late for PoCL
	shadow := filepath.Join(pocl, "scale.h")
	t.Cleanup(func() { os.Remove(shadow) })
	staleCheck(t, Source{Code: []byte(headerSource)}, 1, 6, func() {
		writeFile(t, shadow, "#define SCALE 6.0f\n", time.Minute)
	})
}

// TestEnvAtDeviceInitKeyed: a driver variable set after device init is
// keyed as it is now and as it was then, since a driver may read it at
// either time; unchanged, the key is as before.
func TestEnvAtDeviceInitKeyed(t *testing.T) {
	ts := newTierSet(t, t.TempDir())
	c := NewCache(ts.ctx, ts.bins, CacheOptions{CommitDelay: -1}) // the process's environment
	t.Cleanup(c.Close)
	before := c.compilerEnv()
	t.Setenv("POCL_WORK_GROUP_METHOD", "cbs")
	after := c.compilerEnv()
	for _, v := range []kcache.EnvVar{{Name: "POCL_WORK_GROUP_METHOD", Value: "cbs"}, {Name: "POCL_WORK_GROUP_METHOD" + atDeviceInit, Value: unsetAtInit}} {
		if !slices.Contains(after, v) {
			t.Errorf("after the variable was set: the key's environment %q lacks %q", after, v)
		}
	}
	if slices.ContainsFunc(before, func(v kcache.EnvVar) bool { return v.Name == "POCL_WORK_GROUP_METHOD"+atDeviceInit }) {
		t.Errorf("before: %q holds a device-init mark for a variable unchanged since", before)
	}
	k, err := c.Key(testFixture(t).dev, Source{Code: []byte(testSource)})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(k.Options.Env, kcache.EnvVar{Name: "POCL_WORK_GROUP_METHOD" + atDeviceInit, Value: unsetAtInit}) {
		t.Errorf("the key's environment %q lacks the variable's state at device init", k.Options.Env)
	}
}
