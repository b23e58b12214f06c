package keyparts

import (
	"errors"
	"slices"
	"testing"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
)

// TestOpenCLIdentity pins where each reported string goes in the key:
// two devices that report anything differently must get different keys.
func TestOpenCLIdentity(t *testing.T) {
	d := OpenCLDevice{
		PlatformName: "Portable Computing Language", PlatformVendor: "The pocl project", PlatformVersion: "OpenCL 3.0 PoCL 6.0",
		Name: "cpu-x86", Version: "OpenCL 3.0 PoCL", DriverVersion: "6.0", OpenCLCVersion: "OpenCL C 1.2 PoCL",
	}
	dev, comp := d.Identity()
	want := kcache.Device{Platform: "Portable Computing Language", Name: "cpu-x86", Version: "OpenCL 3.0 PoCL", Driver: "6.0"}
	if dev != want {
		t.Errorf("device = %+v, want %+v", dev, want)
	}
	wantComp := kcache.Compiler{Name: "opencl:The pocl project", Version: "OpenCL 3.0 PoCL 6.0 / OpenCL C 1.2 PoCL"}
	if drv := OpenCLDriver(); len(drv.ICD) > 0 {
		lib := drv.Library()
		wantComp.Library, wantComp.LibrarySize, wantComp.LibraryTime, wantComp.Files = lib.Path, lib.Size, lib.MTime, drv.Files.Digest()
	} else {
		// No driver in this process: every mapped file stands for it.
		wantComp.Files = unfoundDriverFiles(ReadMaps()).Digest()
		if wantComp.Files == (kcache.Digest{}) || wantComp.Files == (Files{}).Digest() {
			t.Fatal("no driver found, and nothing keyed in its place")
		}
	}
	if comp != wantComp {
		t.Errorf("compiler = %+v, want %+v", comp, wantComp)
	}
	base := key(dev, comp)
	for _, change := range []func(*OpenCLDevice){
		func(d *OpenCLDevice) { d.PlatformName += "!" },
		func(d *OpenCLDevice) { d.PlatformVendor += "!" },
		func(d *OpenCLDevice) { d.PlatformVersion += "!" },
		func(d *OpenCLDevice) { d.Name += "!" },
		func(d *OpenCLDevice) { d.Version += "!" },
		func(d *OpenCLDevice) { d.DriverVersion += "!" },
		func(d *OpenCLDevice) { d.OpenCLCVersion += "!" },
	} {
		other := d
		change(&other)
		if key(other.Identity()) == base {
			t.Errorf("%+v and %+v share a key", d, other)
		}
	}
}

func key(dev kcache.Device, comp kcache.Compiler) kcache.Digest {
	return (&kcache.Key{Device: dev, Compiler: comp}).Digest()
}

func TestOpenCLScan(t *testing.T) {
	for _, tc := range []struct {
		platform       string
		complete, each bool
	}{
		{PoCL, true, false},
		{"NVIDIA CUDA", false, true},
		{"", false, true},
	} {
		in, err := OpenCLScan([]byte("kernel void k() {}"), "-I inc -D A=1", tc.platform)
		if err != nil {
			t.Fatal(err)
		}
		if !in.SearchWorkDir || in.CompleteSearchPath != tc.complete || in.EveryCandidate != tc.each {
			t.Errorf("%q: SearchWorkDir %v, CompleteSearchPath %v, EveryCandidate %v", tc.platform, in.SearchWorkDir, in.CompleteSearchPath, in.EveryCandidate)
		}
		want := []string{"-I", "inc", "-D", "A=1"}
		if tc.platform == PoCL {
			want = append([]string{"-Dinline="}, want...) // PoCL's own, first
		}
		if !slices.Equal(in.Args, want) {
			t.Errorf("Args = %q, want %q", in.Args, want)
		}
		if string(in.Source) != "kernel void k() {}" || in.Path != "" || in.WorkDir != "" || in.Depends != nil {
			t.Errorf("input carries more than it was given: %+v", in)
		}
	}
}

// TestOpenCLScanSplitsAsTheDriver checks that options are split as each
// platform's driver splits them: PoCL's way for PoCL, and for a driver
// whose split is not known, no guess where quotes could split otherwise.
func TestOpenCLScanSplitsAsTheDriver(t *testing.T) {
	const opts = `-I'inc' -D "X(a)=#a"`
	in, err := OpenCLScan(nil, opts, PoCL)
	if want := []string{"-Dinline=", "-I'inc'", "-D", " X(a)=#a "}; err != nil || !slices.Equal(in.Args, want) {
		t.Errorf("PoCL: Args = %q, %v; want %q", in.Args, err, want)
	}
	if _, err := OpenCLScan(nil, opts, "NVIDIA CUDA"); !errors.Is(err, deps.ErrUncacheable) {
		t.Errorf("NVIDIA with quotes: %v, want deps.ErrUncacheable", err)
	}
}

// TestOpenCLScanPoCLExtraFlags checks that PoCL's POCL_EXTRA_BUILD_FLAGS,
// which PoCL appends to every program's options, are scanned after them,
// and only for PoCL.
func TestOpenCLScanPoCLExtraFlags(t *testing.T) {
	t.Setenv("POCL_EXTRA_BUILD_FLAGS", "-I /extra -DE=1")
	in, err := OpenCLScan(nil, "-I inc", PoCL)
	if want := []string{"-Dinline=", "-I", "inc", "-I", "/extra", "-DE=1"}; err != nil || !slices.Equal(in.Args, want) {
		t.Errorf("PoCL: Args = %q, %v; want %q", in.Args, err, want)
	}
	in, err = OpenCLScan(nil, "-I inc", "NVIDIA CUDA")
	if want := []string{"-I", "inc"}; err != nil || !slices.Equal(in.Args, want) {
		t.Errorf("NVIDIA: Args = %q, %v; want %q", in.Args, err, want)
	}
}
