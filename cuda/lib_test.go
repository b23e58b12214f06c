package cuda

import (
	"errors"
	"strings"
	"testing"
)

func TestLoadDriverMissingLibrary(t *testing.T) {
	err := loadDriver([]string{"libkcache-no-such-cuda.so.1"})
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("loadDriver = %v, want ErrNoDriver", err)
	}
	for _, want := range []string{"libcuda.so.1", "install the NVIDIA driver"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestLoadNVRTCMissingLibrary(t *testing.T) {
	err := loadNVRTC([]string{"libkcache-no-such-nvrtc.so.13", "/nonexistent/libnvrtc.so.13"})
	if !errors.Is(err, ErrNoNVRTC) {
		t.Fatalf("loadNVRTC = %v, want ErrNoNVRTC", err)
	}
	for _, want := range []string{"libnvrtc.so", "install NVRTC"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// TestLoadDriverMissingSymbol loads a real library that is not the driver:
// resolution must fail naming the missing entry point, not crash later.
func TestLoadDriverMissingSymbol(t *testing.T) {
	err := loadDriver([]string{"libc.so.6"})
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("loadDriver(libc) = %v, want ErrNoDriver", err)
	}
	if !strings.Contains(err.Error(), "missing symbol cuInit") {
		t.Errorf("error %q does not name the missing symbol", err)
	}
}

func TestLoadNVRTCMissingSymbol(t *testing.T) {
	err := loadNVRTC([]string{"libc.so.6"})
	if !errors.Is(err, ErrNoNVRTC) || !strings.Contains(err.Error(), "missing symbol nvrtcVersion") {
		t.Fatalf("loadNVRTC(libc) = %v, want ErrNoNVRTC naming nvrtcVersion", err)
	}
}

func TestNVRTCCandidates(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"libnvrtc.so.12.4.99", "libnvrtc.so.13.0.48", "libnvrtc-builtins.so.13.0"} {
		writeFile(t, dir+"/lib64/"+f, "")
	}
	t.Setenv("CUDA_HOME", dir)
	got := nvrtcCandidates()
	if got[0] != "libnvrtc.so.13" {
		t.Errorf("first candidate %q, want the newest soname", got[0])
	}
	i13 := indexOf(got, dir+"/lib64/libnvrtc.so.13.0.48")
	i12 := indexOf(got, dir+"/lib64/libnvrtc.so.12.4.99")
	if i13 < 0 || i12 < 0 || i13 > i12 {
		t.Errorf("candidates %q: want CUDA_HOME's libraries, newest first", got)
	}
	for _, c := range got {
		if strings.Contains(c, "builtins") {
			t.Errorf("candidate %q is NVRTC's builtins library, not NVRTC", c)
		}
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func TestErrorMessages(t *testing.T) {
	e := &Error{Code: ErrorNoBinaryForGPU, Op: "cuModuleLoadDataEx", Log: "ptxas fatal"}
	for _, want := range []string{"cuModuleLoadDataEx", "CUDA_ERROR_NO_BINARY_FOR_GPU", "209", "ptxas fatal"} {
		if !strings.Contains(e.Error(), want) {
			t.Errorf("%q does not contain %q", e.Error(), want)
		}
	}
	if !IsImageRejected(e) || IsOutOfMemory(e) {
		t.Errorf("classification of %v wrong", e)
	}
	if !IsOutOfMemory(&Error{Code: ErrorOutOfMemory}) {
		t.Error("out of memory not recognised")
	}
	if !errors.Is(&Error{Code: ErrorNoDevice}, ErrNoDevice) {
		t.Error("CUDA_ERROR_NO_DEVICE does not match ErrNoDevice")
	}
}
