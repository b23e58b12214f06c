package main

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
	"github.com/kcache/kcache/opencl"
)

// TestKeyMatchesBinding checks that the layer and the opencl package key
// the same build alike: an application's programs are built through the
// layer, and the opencl package then computes its own key for each stored
// program's source and options, on the same PoCL device, in the same
// working directory and environment. Device, compiler, source, headers,
// options and environment must be equal; only the image format differs,
// by design (the layer stores a record, not a bare binary).
func TestKeyMatchesBinding(t *testing.T) {
	a, dir, cache := headerApp(t)
	// A variable of the drivers' families that changes no code: both
	// sides must key it.
	environ := append(env(t, cache), "CL_CONFIG_KCACHE_TEST=1")
	cmd := exec.Command(a.argv[0], a.argv[1:]...)
	cmd.Dir, cmd.Env = dir, environ
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s through the layer: %v\n%s", a.name, err, out)
	}
	if err := waitWorker(cache); err != nil {
		t.Fatal(err)
	}
	keys := storedKeys(t, cache)
	if len(keys) != a.programs {
		t.Fatalf("%d entries stored, want %d", len(keys), a.programs)
	}

	if err := opencl.Load(); err != nil {
		requireReal(t, "OpenCL", err)
	}
	t.Chdir(dir)
	// The application's layer list names the layer itself, which the
	// binding has no reason to leave out of its keys.
	bindingEnv := slices.DeleteFunc(slices.Clone(environ), func(kv string) bool { return strings.HasPrefix(kv, "OPENCL_LAYERS=") })
	for _, k := range keys {
		dev := deviceNamed(t, k.Device)
		cl, err := opencl.NewContext(dev)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Release()
		c := opencl.NewCache(cl, kcache.New(kcache.Config{InMemory: true}, nil), opencl.CacheOptions{Environ: bindingEnv})
		defer c.Close()
		got, err := c.Key(dev, opencl.Source{Code: k.Image.Source, Options: k.Options.Compile})
		if err != nil {
			t.Fatal(err)
		}
		compareKeys(t, k, got)
	}
	if !slices.ContainsFunc(keys, func(k *kcache.Key) bool { return len(k.Image.Headers) > 0 }) {
		t.Error("no stored key names a header: the working directory's header was not found")
	}
}

func compareKeys(t *testing.T, layer, binding *kcache.Key) {
	t.Helper()
	if layer.Device != binding.Device {
		t.Errorf("device: layer %+v, opencl %+v", layer.Device, binding.Device)
	}
	if layer.Compiler.Library == "" {
		t.Errorf("the layer's key lacks the driver library's identity: %+v", layer.Compiler)
	}
	if layer.Compiler != binding.Compiler {
		t.Errorf("compiler: layer %+v, opencl %+v", layer.Compiler, binding.Compiler)
	}
	if !bytes.Equal(layer.Image.Source, binding.Image.Source) {
		t.Errorf("source differs")
	}
	if !slices.Equal(layer.Image.Headers, binding.Image.Headers) {
		t.Errorf("headers: layer %v, opencl %v", layer.Image.Headers, binding.Image.Headers)
	}
	if layer.Options.Compile != binding.Options.Compile || !slices.Equal(layer.Options.Env, binding.Options.Env) {
		t.Errorf("options: layer %+v, opencl %+v", layer.Options, binding.Options)
	}
	if !slices.Contains(layer.Options.Env, kcache.EnvVar{Name: "CL_CONFIG_KCACHE_TEST", Value: "1"}) {
		t.Errorf("the layer's key lacks the drivers' variable: %v", layer.Options.Env)
	}
	if layer.Image.Format == binding.Image.Format {
		t.Errorf("the layer's entries share the binding's format %q", layer.Image.Format)
	}
}

// storedKeys returns the keys of the entries of the disk tier at dir.
func storedKeys(t *testing.T, dir string) []*kcache.Key {
	t.Helper()
	st, err := disk.Open(disk.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	var keys []*kcache.Key
	err = st.Walk(context.Background(), func(i disk.Info) error {
		if i.Err != nil {
			return i.Err
		}
		if !kcache.IsDependencyRecord(i.Key) {
			keys = append(keys, i.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// deviceNamed returns the device of the platform and name d records.
func deviceNamed(t *testing.T, d kcache.Device) opencl.Device {
	t.Helper()
	devs, err := opencl.AllDevices()
	if err != nil {
		t.Fatal(err)
	}
	for _, dev := range devs {
		if dev.Name() == d.Name && dev.Platform().Name() == d.Platform {
			return dev
		}
	}
	t.Fatalf("no device %q of platform %q", d.Name, d.Platform)
	return opencl.Device{}
}

// dependencyRecordFiles returns the files of the entries under dir that
// are dependency records of the scanner, not programs' binaries.
func dependencyRecordFiles(dir string) map[string]bool {
	st, err := disk.Open(disk.Options{Dir: dir})
	if err != nil {
		return nil
	}
	defer st.Close(context.Background())
	out := map[string]bool{}
	st.Walk(context.Background(), func(i disk.Info) error {
		if i.Key != nil && kcache.IsDependencyRecord(i.Key) {
			out[i.RecordPath()] = true
		}
		return nil
	})
	return out
}
