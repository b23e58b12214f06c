package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// TestLogText checks how a log is read from a pooled buffer: up to the
// driver's NUL, never past the length the driver reports, and never into
// what an earlier load left behind.
func TestLogText(t *testing.T) {
	buf := func(s string) []byte {
		b := make([]byte, 32)
		copy(b, s)
		return b
	}
	stale := buf("new\x00 and an older, longer log")
	full := []byte(strings.Repeat("x", 32))
	for _, tc := range []struct {
		name   string
		buf    []byte
		filled uintptr
		want   string
	}{
		{"empty", buf(""), 0, ""},
		{"to the NUL", buf("ptxas info"), 0, "ptxas info"},
		{"stale bytes after the NUL", stale, 0, "new"},
		{"reported length with its NUL", stale, 4, "new"},
		{"reported length without a NUL", buf("abcdefgh"), 3, "abc"},
		{"reported length beyond the buffer", buf("abc"), 1 << 20, "abc"},
		{"no NUL anywhere", full, 0, string(full)},
	} {
		if got := logText(tc.buf, tc.filled); got != tc.want {
			t.Errorf("%s: logText = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestLoadArgsReused checks that arguments from the pool start each load
// empty: no log from the last load, no option of the last caller's.
func TestLoadArgsReused(t *testing.T) {
	a := new(loadArgs)
	a.set(map[JITOption]int{JITLogVerbose: 1, JITOptimizationLevel: 3})
	copy(a.infoLog[:], "ptxas info: an older load's log")
	copy(a.errLog[:], "ptxas error: an older load's error")
	a.vals[0], a.vals[2], a.vals[4] = 42, 31, 34 // what the driver wrote back
	a.set(nil)
	if a.infoLog[0] != 0 || a.errLog[0] != 0 {
		t.Errorf("logs not emptied: %q, %q", logText(a.infoLog[:], 0), logText(a.errLog[:], 0))
	}
	wantKeys := []int32{jitWallTime, jitInfoLog, jitInfoLogSize, jitErrorLog, jitErrorLogSize}
	wantVals := []uintptr{0, uintptr(unsafe.Pointer(&a.infoLog[0])), jitLogBufferBytes, uintptr(unsafe.Pointer(&a.errLog[0])), jitLogBufferBytes}
	if fmt.Sprint(a.keys) != fmt.Sprint(wantKeys) || fmt.Sprint(a.vals) != fmt.Sprint(wantVals) {
		t.Errorf("set(nil) = %v %v, want %v %v", a.keys, a.vals, wantKeys, wantVals)
	}
	a.set(map[JITOption]int{JITMaxRegisters: 32})
	if len(a.keys) != 6 || a.keys[5] != int32(JITMaxRegisters) || a.vals[5] != 32 {
		t.Errorf("set(one option) = %v %v", a.keys, a.vals)
	}
}

// TestLoadLogsNotStale loads, through the pool's reused buffers, images
// whose loads write logs (PTX the JIT rejects, PTX loaded verbosely) and
// a CUBIN, whose load writes none, from many goroutines: each load must
// report its own log, never one an earlier load left in the buffer.
func TestLoadLogsNotStale(t *testing.T) {
	ctx := requireGPU(t)
	arch, err := ctx.Device().Arch()
	if err != nil {
		t.Fatal(err)
	}
	compile := func(target string) []byte {
		p, err := NewProgram([]byte(saxpySource), "saxpy.cu", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Destroy()
		if err := p.Compile([]string{"-arch=" + target, "-std=c++17"}); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(target, "sm_") {
			b, err := p.CUBIN()
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		b, err := p.PTX()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cubin, ptx := compile(arch), compile("compute"+strings.TrimPrefix(arch, "sm"))
	// Two images the JIT rejects, with different logs.
	bad := [][]byte{
		[]byte(".version 99.0\n.target sm_90\n.address_size 64\n"),
		[]byte(".version 8.0\n.target sm_90\n.address_size 64\nnot ptx at all\n"),
	}
	loadErrLog := func(image []byte) (string, error) {
		_, err := ctx.LoadModule(image, nil)
		var e *Error
		if !errors.As(err, &e) {
			return "", fmt.Errorf("bad PTX loaded: %v", err)
		}
		return e.Log, nil
	}
	want := make([]string, len(bad))
	for i, b := range bad {
		if want[i], err = loadErrLog(b); err != nil || want[i] == "" {
			t.Fatalf("bad PTX %d: log %q, %v: want the JIT's error", i, want[i], err)
		}
	}
	if want[0] == want[1] {
		t.Fatalf("both bad images give the log %q", want[0])
	}
	t.Logf("error logs: %q, %q", want[0], want[1])
	var seq atomic.Int64
	var noInfo atomic.Int64
	check := func() error {
		// A PTX of its own each time, so that the driver's JIT cache
		// cannot serve it and the verbose JIT writes its info log.
		unique := fmt.Appendf(bytes.Clone(bytes.TrimRight(ptx, "\x00")), "\n// load %d\n", seq.Add(1))
		m, err := ctx.LoadModule(unique, map[JITOption]int{JITLogVerbose: 1})
		if err != nil {
			return err
		}
		if m.InfoLog == "" {
			noInfo.Add(1)
		}
		m.Unload()
		m, err = ctx.LoadModule(cubin, nil)
		if err != nil {
			return err
		}
		info := m.InfoLog
		m.Unload()
		if info != "" {
			return fmt.Errorf("CUBIN load after a verbose one: info log %q, want none", info)
		}
		for i, b := range bad {
			if got, err := loadErrLog(b); err != nil || got != want[i] {
				return fmt.Errorf("bad PTX %d again: log %q, %v; want %q", i, got, err, want[i])
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 8 {
		wg.Go(func() {
			for range 2 {
				if err := check(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d of %d verbose PTX loads wrote no info log", noInfo.Load(), seq.Load())
}

// BenchmarkLoadModule measures a load of a small CUBIN and its unload:
// what a warm hit and the floor both pay the driver.
func BenchmarkLoadModule(b *testing.B) {
	ctx := requireGPU(b)
	arch, _ := ctx.Device().Arch()
	p, err := NewProgram([]byte(saxpySource), "saxpy.cu", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Destroy()
	if err := p.Compile([]string{"-arch=" + arch, "-std=c++17"}); err != nil {
		b.Fatal(err)
	}
	cubin, err := p.CUBIN()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m, err := ctx.LoadModule(cubin, nil)
		if err != nil {
			b.Fatal(err)
		}
		m.Unload()
	}
}

// TestDriverLogWrites records what the driver writes into the log
// buffers and their size options when it loads a CUBIN, from buffers
// filled with 0xff: LoadModule relies on it writing a NUL-terminated log,
// if any, and at most the size it reports.
func TestDriverLogWrites(t *testing.T) {
	ctx := requireGPU(t)
	arch, _ := ctx.Device().Arch()
	p, err := NewProgram([]byte(saxpySource), "saxpy.cu", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Destroy()
	if err := p.Compile([]string{"-arch=" + arch, "-std=c++17"}); err != nil {
		t.Fatal(err)
	}
	cubin, err := p.CUBIN()
	if err != nil {
		t.Fatal(err)
	}
	for _, image := range []struct {
		name string
		code []byte
	}{{"CUBIN", cubin}, {"bad PTX", []byte(".version 99.0\n.target sm_90\n.address_size 64\n\x00")}} {
		a := new(loadArgs)
		a.set(nil)
		for i := range a.infoLog {
			a.infoLog[i], a.errLog[i] = 0xff, 0xff
		}
		var h uintptr
		err := ctx.call("cuModuleLoadDataEx", func() Result {
			return cuModuleLoadDataEx(&h, unsafe.Pointer(&image.code[0]), uint32(len(a.keys)), &a.keys[0], &a.vals[0])
		})
		if err == nil {
			ctx.call("cuModuleUnload", func() Result { return cuModuleUnload(h) })
		}
		changed := func(b []byte) int {
			n := 0
			for _, c := range b {
				if c != 0xff {
					n++
				}
			}
			return n
		}
		t.Logf("%s: err %v; info log: size option %d, %d bytes written, %q; error log: size option %d, %d bytes written, %q",
			image.name, err, a.vals[2], changed(a.infoLog[:]), logText(a.infoLog[:], a.vals[2]),
			a.vals[4], changed(a.errLog[:]), logText(a.errLog[:], a.vals[4]))
	}
}
