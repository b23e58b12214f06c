package cuda

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kcache/kcache/cuda/compileserver"
)

// NVRTC's precompiled-header entry points (CUDA 12.8+), bound on first use
// by the compile server only.
var (
	nvrtcGetPCHHeapSize         func(size *uintptr) nvrtcResult
	nvrtcSetPCHHeapSize         func(size uintptr) nvrtcResult
	nvrtcGetPCHCreateStatus     func(p uintptr) nvrtcResult
	nvrtcGetPCHHeapSizeRequired func(p uintptr, size *uintptr) nvrtcResult
	pchOnce                     sync.Once
	pchErr                      error
)

// NVRTC's results for PCH creation (nvrtcGetPCHCreateStatus).
const (
	nvrtcNoPCHCreateAttempted   nvrtcResult = 12
	nvrtcPCHCreateHeapExhausted nvrtcResult = 14
)

// loadPCH binds the PCH entry points of the NVRTC already loaded: dlopen
// of the same file returns the same library.
func loadPCH() error {
	pchOnce.Do(func() {
		if pchErr = LoadNVRTC(); pchErr != nil {
			return
		}
		h, _, err := openLibrary([]string{NVRTCLibrary()})
		if err != nil {
			pchErr = fmt.Errorf("cuda: reopening NVRTC: %w", err)
			return
		}
		for _, e := range []nvrtcEntry{
			{&nvrtcGetPCHHeapSize, "nvrtcGetPCHHeapSize", false},
			{&nvrtcSetPCHHeapSize, "nvrtcSetPCHHeapSize", false},
			{&nvrtcGetPCHCreateStatus, "nvrtcGetPCHCreateStatus", false},
			{&nvrtcGetPCHHeapSizeRequired, "nvrtcGetPCHHeapSizeRequired", false},
		} {
			sym, err := lookup(h, e.name)
			if err != nil {
				pchErr = fmt.Errorf("%w: %s has no %s (NVRTC 12.8 or newer has): %w", ErrNoNVRTC, NVRTCLibrary(), e.name, err)
				return
			}
			bind(e.fn, sym)
		}
	})
	return pchErr
}

// PCHHeapSize returns the size of NVRTC's PCH heap in this process.
func PCHHeapSize() (int64, error) {
	if err := loadPCH(); err != nil {
		return 0, err
	}
	var n uintptr
	err := nvrtcCheck("nvrtcGetPCHHeapSize", nvrtcGetPCHHeapSize(&n))
	return int64(n), err
}

// ServeCompiler is the compile server's NVRTC: it compiles requests with
// NVRTC's automatic precompiled headers on, in a process whose PCH heap
// stays warm across requests (a worker of the server's pool).
type ServeCompiler struct {
	// HeapLimit caps NVRTC's PCH heap, in bytes: when a compile reports
	// the heap too small, it is grown to what NVRTC asks for, up to this.
	HeapLimit int64
	// Logger receives NVRTC's PCH messages; nil discards them.
	Logger *slog.Logger

	shown atomic.Int32 // PCH messages logged so far
}

// NewServeCompiler loads NVRTC and its PCH entry points.
func NewServeCompiler(heapLimit int64) (*ServeCompiler, error) {
	if err := loadPCH(); err != nil {
		return nil, err
	}
	return &ServeCompiler{HeapLimit: heapLimit}, nil
}

// Identity implements compileserver.Compiler.
func (s *ServeCompiler) Identity() string { return ServeIdentity() }

// pchUsedPattern finds NVRTC's note, with -pch-messages=true, that a
// compile used a PCH; NVRTC 13.0 writes
// `"k.cu": using precompiled header file "/tmp/__nvrtc_auto_pch_965_0/k_0.pch"`.
var pchUsedPattern = regexp.MustCompile(`(?i)\busing precompiled header\b`)

// Compile implements compileserver.Compiler.
func (s *ServeCompiler) Compile(ctx context.Context, r *compileserver.Request, pch bool) (*compileserver.Reply, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start, faults := time.Now(), minorFaults()
	headers := make([]Header, len(r.Headers))
	for i, h := range r.Headers {
		headers[i] = Header{Name: h.Name, Content: h.Content}
	}
	prog, err := NewProgram(r.Code, r.Name, headers)
	if err != nil {
		return nil, err
	}
	defer prog.Destroy()
	for _, e := range r.NameExpressions {
		if err := prog.AddNameExpression(e); err != nil {
			return nil, err
		}
	}
	created := time.Now()
	err = prog.Compile(workerOptions(r.Options, pch))
	compiled := time.Now()
	var ce *CompileError
	if errors.As(err, &ce) {
		return &compileserver.Reply{Status: compileserver.StatusCompileError, Log: ce.Log}, nil
	}
	if err != nil {
		return nil, err
	}
	reply := &compileserver.Reply{Status: compileserver.StatusOK}
	if pch {
		reply.PCH = s.pchUse(prog)
	}
	for _, e := range r.NameExpressions {
		l, err := prog.LoweredName(e)
		if err != nil {
			return nil, err
		}
		reply.Lowered = append(reply.Lowered, l)
	}
	if r.Format == FormatCUBIN {
		reply.Code, err = prog.CUBIN()
	} else {
		reply.Code, err = prog.PTX()
	}
	s.logPhases(r.Name, start, created, compiled, minorFaults()-faults, reply)
	return reply, err
}

// workerOptions are the options a worker gives NVRTC for a request's:
// with pch, NVRTC's automatic PCH and its messages (whether a compile
// used a PCH NVRTC says only in its log). Neither changes the image
// (TestServeSameImage compares it with the client's own compile).
//
// Not -no-cache, though it leaves the image as it was and NVRTC's back
// end then neither looks up nor writes the driver's ComputeCache: on the
// H100 it did not make a PCH'd compile faster (-3 % to +1 %, alternating
// in one process), and with it every served client's CUDA initialisation
// took 100 ms longer and its exit 55 ms longer, as in a client alone on
// the GPU: a worker whose NVRTC uses the ComputeCache goes through the
// CUDA driver and keeps it open (libcuda mapped, /dev/nvidia* open), and a
// process that is not the only one with the driver open starts and exits
// faster (bench/RESULTS-cuda.md, "Round 4").
func workerOptions(options []string, pch bool) []string {
	opts := slices.Clone(options)
	if pch {
		opts = append(opts, "-pch", "-pch-messages=true")
	}
	return opts
}

// logPhases records, at debug level, where one compile's time went: the
// program's creation, NVRTC's compile, and what followed it (the PCH
// status, the log, the lowered names and the image).
func (s *ServeCompiler) logPhases(name string, start, created, compiled time.Time, faults int64, reply *compileserver.Reply) {
	if s.Logger == nil {
		return
	}
	s.Logger.Debug("kcache serve: NVRTC phases", "program", name, "pch", reply.PCH,
		"create_ms", msSince(start, created), "compile_ms", msSince(created, compiled),
		"output_ms", msSince(compiled, time.Now()), "bytes", len(reply.Code), "minor_faults", faults)
}

// minorFaults is the process's count of minor page faults so far: memory
// NVRTC touches afresh, each a page the kernel zeroes or maps.
func minorFaults() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Minflt
}

// msSince is the time from a to b in milliseconds, for logs.
func msSince(a, b time.Time) float64 { return float64(b.Sub(a).Microseconds()) / 1000 }

// pchUse says what NVRTC's automatic PCH did for prog, and grows the heap
// for the next compile where it was too small. NVRTC reports creation
// through nvrtcGetPCHCreateStatus, use only in its log.
func (s *ServeCompiler) pchUse(prog *Program) compileserver.PCHUse {
	log, _ := prog.Log()
	s.logPCH(log)
	switch nvrtcGetPCHCreateStatus(prog.h) {
	case nvrtcSuccess:
		return compileserver.PCHCreated
	case nvrtcPCHCreateHeapExhausted:
		var need uintptr
		if nvrtcGetPCHHeapSizeRequired(prog.h, &need) == nvrtcSuccess && int64(need) <= s.HeapLimit {
			nvrtcSetPCHHeapSize(need)
		}
	}
	if pchUsedPattern.MatchString(log) {
		return compileserver.PCHUsed
	}
	return compileserver.PCHNone
}

// logPCH logs NVRTC's PCH messages: the first few at info level, as a
// record of what NVRTC did, the rest at debug level.
func (s *ServeCompiler) logPCH(log string) {
	if s.Logger == nil {
		return
	}
	for line := range strings.Lines(log) {
		if strings.Contains(strings.ToLower(line), "precompiled header") {
			level := slog.LevelDebug
			if s.shown.Add(1) <= 8 {
				level = slog.LevelInfo
			}
			s.Logger.Log(context.Background(), level, "kcache serve: NVRTC", "pch", strings.TrimSpace(line))
		}
	}
}

// Close removes the directories NVRTC's automatic PCH wrote for this
// process (see RemovePCHFiles).
func (s *ServeCompiler) Close() { RemovePCHFiles(os.Getpid()) }

// RemovePCHFiles removes the directories NVRTC's automatic PCH wrote for
// process pid (/tmp/__nvrtc_auto_pch_PID_N; a PCH of CUB's headers is
// 180-190 MB): NVRTC names them by process, so no other process uses
// them once pid has exited. The compile server calls it for each worker it
// stopped, since a killed worker cannot.
func RemovePCHFiles(pid int) {
	for _, tmp := range []string{os.TempDir(), "/tmp"} {
		dirs, _ := filepath.Glob(filepath.Join(tmp, fmt.Sprintf("__nvrtc_auto_pch_%d_*", pid)))
		for _, d := range dirs {
			os.RemoveAll(d) // best effort: what cannot be removed is only disk space
		}
	}
}
