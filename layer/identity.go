package main

/*
#include "layer.h"
*/
import "C"

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/kcache/kcache"
)

// identity is the device and compiler part of a key: what the driver
// reports about the device, and the file identity of the driver library,
// which changes when a driver is replaced in place without a new version
// string. It is computed once per device handle.
type identity struct {
	dev  kcache.Device
	comp kcache.Compiler
}

func deviceIdentity(d C.cl_device_id) identity {
	p := devicePlatform(d)
	id := identity{
		dev: kcache.Device{
			Platform: platformString(p, C.CL_PLATFORM_NAME),
			Name:     deviceString(d, C.CL_DEVICE_NAME),
			Version:  deviceString(d, C.CL_DEVICE_VERSION),
			Driver:   deviceString(d, C.CL_DRIVER_VERSION),
		},
		comp: kcache.Compiler{
			Name:    "opencl:" + platformString(p, C.CL_PLATFORM_VENDOR),
			Version: platformString(p, C.CL_PLATFORM_VERSION) + " / " + deviceString(d, C.CL_DEVICE_OPENCL_C_VERSION),
		},
	}
	if lib := driverLibrary(); lib.path != "" {
		id.comp.Library, id.comp.LibrarySize, id.comp.LibraryTime = lib.path, lib.size, lib.mtime
	}
	return id
}

// identities remembers each device's identity: a dozen driver queries and a
// read of the process's memory map are paid once per device.
type identities struct {
	mu  sync.Mutex // guards ids; never held across a driver call
	ids map[C.cl_device_id]identity
}

func (s *identities) of(d C.cl_device_id) identity {
	s.mu.Lock()
	id, ok := s.ids[d]
	s.mu.Unlock()
	if ok {
		return id
	}
	id = deviceIdentity(d)
	s.mu.Lock()
	if s.ids == nil {
		s.ids = map[C.cl_device_id]identity{}
	}
	s.ids[d] = id
	s.mu.Unlock()
	return id
}

type libraryFile struct {
	path        string
	size, mtime int64
}

// driverLibrary finds the ICD driver libraries mapped into this process
// (those the loader's vendor files name) and describes them; with several,
// their identities are joined, so a change to any of them changes the key.
var driverLibrary = sync.OnceValue(func() libraryFile {
	names := icdLibraryNames()
	var out libraryFile
	for _, path := range mappedLibraries() {
		if !names[filepath.Base(path)] {
			continue
		}
		fi, err := os.Stat(path)
		if err != nil {
			continue
		}
		if out.path != "" {
			out.path += ":"
		}
		out.path += path
		out.size += fi.Size()
		out.mtime ^= fi.ModTime().UnixNano()
	}
	return out
})

// icdLibraryNames returns the base names of the driver libraries named by
// the loader's vendor files (OCL_ICD_VENDORS or /etc/OpenCL/vendors).
func icdLibraryNames() map[string]bool {
	dir := os.Getenv("OCL_ICD_VENDORS")
	if dir == "" {
		dir = "/etc/OpenCL/vendors"
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.icd"))
	names := map[string]bool{}
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			names[filepath.Base(strings.TrimSpace(string(b)))] = true
		}
	}
	return names
}

// mappedLibraries returns the shared objects mapped into this process.
func mappedLibraries() []string {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || !strings.Contains(fields[5], ".so") || slices.Contains(out, fields[5]) {
			continue
		}
		out = append(out, fields[5])
	}
	return out
}
