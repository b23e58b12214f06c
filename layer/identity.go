package main

/*
#include "layer.h"
*/
import "C"

import (
	"fmt"
	"sync"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/internal/keyparts"
)

// identity is the device and compiler part of a key: what the driver
// reports about the device, and the file identity of the driver library,
// which changes when a driver is replaced in place without a new version
// string. It is computed once per device handle.
type identity struct {
	dev  kcache.Device
	comp kcache.Compiler
	cl   keyparts.OpenCLDevice // what the driver reported, for build orders
}

func deviceIdentity(d C.cl_device_id) identity {
	p := devicePlatform(d)
	var id identity
	id.cl = keyparts.OpenCLDevice{
		PlatformName:    platformString(p, C.CL_PLATFORM_NAME),
		PlatformVendor:  platformString(p, C.CL_PLATFORM_VENDOR),
		PlatformVersion: platformString(p, C.CL_PLATFORM_VERSION),
		Name:            deviceString(d, C.CL_DEVICE_NAME),
		Version:         deviceString(d, C.CL_DEVICE_VERSION),
		DriverVersion:   deviceString(d, C.CL_DRIVER_VERSION),
		OpenCLCVersion:  deviceString(d, C.CL_DEVICE_OPENCL_C_VERSION),
	}
	id.dev, id.comp = id.cl.Identity()
	return id
}

// identities remembers each device's identity: a dozen driver queries and a
// read of the process's memory map are paid once per device.
type identities struct {
	mu  sync.Mutex // guards ids; never held across a driver call
	ids map[C.cl_device_id]identity
}

func (s *identities) of(d C.cl_device_id) identity {
	if id, ok := s.known(d); ok {
		return id
	}
	id := deviceIdentity(d)
	s.mu.Lock()
	if s.ids == nil {
		s.ids = map[C.cl_device_id]identity{}
	}
	s.ids[d] = id
	s.mu.Unlock()
	return id
}

// known returns d's identity if it was computed already.
func (s *identities) known(d C.cl_device_id) (identity, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.ids[d]
	return id, ok
}

// all returns a function that returns the identities of devs, in order.
// Those not known yet are computed on another goroutine meanwhile: a
// device's first identity waits for the driver's files, which a
// background search may still be finding, and the caller has other work
// (the scan) to do until it needs them. The function fails where that
// goroutine panicked, which a guest in the application's process must not
// let through.
func (s *identities) all(devs []C.cl_device_id) func() ([]identity, error) {
	out := make([]identity, len(devs))
	missing := false
	for i, d := range devs {
		id, ok := s.known(d)
		out[i], missing = id, missing || !ok
	}
	if !missing {
		return func() ([]identity, error) { return out, nil }
	}
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("kcache layer: a device's identity: %v", r)
			}
		}()
		for i, d := range devs {
			out[i] = s.of(d)
		}
	}()
	return func() ([]identity, error) {
		<-done
		if err != nil {
			return nil, err
		}
		return out, nil
	}
}

// platform returns the name of d's platform, which the scan needs, without
// waiting for the driver's files.
func (s *identities) platform(d C.cl_device_id) string {
	if id, ok := s.known(d); ok {
		return id.dev.Platform
	}
	return platformString(devicePlatform(d), C.CL_PLATFORM_NAME)
}
