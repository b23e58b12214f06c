package cuda

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
)

// nvrtcBuiltinHeader is the one header name NVRTC 13.0 resolves with no
// directory: it includes it in every program, from its builtins library.
// Measured on the H100 (bench/RESULTS-cuda.md, "Key precision on CCCL"):
// of 2,157 names probed (every C and C++ standard header, every header of
// the toolkit's include directory, every name CCCL includes), quoted and
// angled, with no -I, only this one compiled; it wins over a file of the
// same name in an -I directory or the working directory.
const nvrtcBuiltinHeader = "__nv_nvrtc_builtin_header.h"

// scanInputs returns the dependency scanner's inputs for src: the program,
// then each header handed to NVRTC in memory, searched as NVRTC searches.
func scanInputs(src Source, p plan) []deps.Input {
	main := nvrtcInput(src, p)
	main.Source, main.Depends = src.Code, src.Depends
	if pch := pchFiles(p.options); len(pch) > 0 {
		main.Depends = append(slices.Clip(src.Depends), pch...)
	}
	// NVRTC searches the directory of the program's name (relative to the
	// working directory: "kcache.cu" names the working directory) first for
	// its quoted includes, unless -no-source-include.
	main.Path = programName(src)
	if slices.Contains(p.options, "-no-source-include") || slices.Contains(p.options, "--no-source-include") {
		main.Path = ""
	}
	ins := []deps.Input{main}
	for _, h := range src.Headers {
		in := nvrtcInput(src, p)
		in.Source = h.Content
		ins = append(ins, in)
	}
	return ins
}

// pchFiles returns the precompiled headers options make NVRTC read
// (--use-pch=FILE, CUDA 12.8+): a PCH holds the declarations and macros of
// the headers it was made from, with the options it was made with, so the
// file itself is a dependency no scan of the source can see, declared as
// Source.Depends are. The PCHs NVRTC makes and finds on its own (--pch,
// --pch-dir) are made from the headers the key already holds.
func pchFiles(options []string) []string {
	var files []string
	for i, o := range options {
		name, value, joined := strings.Cut(o, "=")
		if name != "--use-pch" && name != "-use-pch" {
			continue
		}
		switch {
		case joined:
			files = append(files, value)
		case i+1 < len(options):
			files = append(files, options[i+1])
		}
	}
	return files
}

// scannedEarly returns the files src includes, as the scanner finds them.
// With early, a new process's first key takes them from the dependency
// records of src's inputs before the records' stats are done (records of
// more than a few places), and confirm waits for those stats
// (deps.Scanner.AppendHeadersEarly): the caller looks its binary up
// meanwhile (a disk read, a module load, which on a CUB kernel take longer
// than the stats of its 700 files) and uses nothing it found unless
// confirm returns true.
func (c *Cache) scannedEarly(ctx context.Context, src Source, p plan, early bool) (_ []kcache.Header, confirm deps.Confirm, err error) {
	if !early {
		scanned, err := c.scanned(ctx, nil, src, p)
		return scanned, keyHeld, err
	}
	ins := scanInputs(src, p)
	if len(ins) == 1 { // no header in memory: the hit path allocates nothing more
		return c.scanner.AppendHeadersEarly(ctx, nil, ins[0])
	}
	var dst []kcache.Header
	confirms := make([]deps.Confirm, len(ins))
	for i, in := range ins {
		if dst, confirms[i], err = c.scanner.AppendHeadersEarly(ctx, dst, in); err != nil {
			return nil, nil, err
		}
	}
	return dst, func() bool {
		for _, ok := range confirms {
			if !ok() {
				return false
			}
		}
		return true
	}, nil
}

// keyHeld is the deps.Confirm of a key whose headers held when it was
// computed.
func keyHeld() bool { return true }

// nvrtcInput is what every input of src shares: the options, and, for
// NVRTC 13 (whose search was measured), the promise that it searches no
// directory of its own: an include found nowhere fails the build where it
// is live, so it is keyed by its absence, and only the names NVRTC holds
// (its built-in header and src's headers in memory) may define macros the
// scan cannot see. For other versions, an include found nowhere may come
// from a place the scan cannot see.
func nvrtcInput(src Source, p plan) deps.Input {
	in := deps.Input{Args: p.options, BaseDir: p.baseDir}
	if major, err := nvrtcMajor(); err == nil && major == 13 {
		nvrtc13(&in, src)
	}
	return in
}

// nvrtc13 sets in up for NVRTC 13's search, as measured.
func nvrtc13(in *deps.Input, src Source) {
	in.CompleteSearchPath = true
	in.VerifiesPredefines = true // Cache.checkAssumptions asks NVRTC
	in.CompilerMacros = nvrtcMacros
	in.LexesCPlusPlus = lexesCPlusPlus14(in.Args)
	in.CompilerHeaders = nvrtcBuiltinHeaders // the scanner copies what it keeps
	if len(src.Headers) > 0 {
		in.CompilerHeaders = make([]string, 1, 1+len(src.Headers))
		in.CompilerHeaders[0] = nvrtcBuiltinHeader
		for _, h := range src.Headers {
			in.CompilerHeaders = append(in.CompilerHeaders, h.Name)
		}
	}
}

// lexesCPlusPlus14 reports whether NVRTC 13 lexes a program built with
// options as C++14 or later does (digit separators, raw strings): its
// default dialect is C++17, and every -std= or --std= option must name
// C++14, 17 or 20. An option it cannot read so (a -std with its value
// apart, an older dialect, one it does not know) leaves the scan lexing
// as it does for any C++, which narrows less but never wrongly.
func lexesCPlusPlus14(options []string) bool {
	for _, o := range options {
		name, value, joined := strings.Cut(strings.TrimPrefix(o, "-"), "=")
		if name != "-std" && name != "std" {
			continue
		}
		if !joined {
			return false
		}
		switch value {
		case "c++14", "c++17", "c++20":
		default:
			return false
		}
	}
	return true
}

// nvrtcBuiltinHeaders are the compiler headers of a source with no header
// in memory, shared by every input: never changed.
var nvrtcBuiltinHeaders = []string{nvrtcBuiltinHeader}

// nvrtcMajor is NVRTC's major version, asked once: it cannot change
// within a process, and every key computes its scan input.
var nvrtcMajor = sync.OnceValues(func() (int, error) {
	major, _, err := NVRTCVersion()
	return major, err
})

// nvrtcMacros are the names beyond the reserved ones that NVRTC 13.0
// defines in every program, from its built-in header: measured on the
// H100 by testing #ifdef on each of the 3,174 such names the toolkit's
// headers define, under -arch=sm_90 -std=c++17 and with no option (the
// same 158 names both ways: these 104, and 54 of NV_*, kept as a prefix so
// that the architectures of later versions are covered too).
var nvrtcMacros = []string{
	"NV_*",
	"CUDARTAPI", "CUDARTAPI_CDECL", "CUDART_CB", "CUDART_DEVICE", "CUDART_VERSION",
	"CUDA_IPC_HANDLE_SIZE", "CU_UUID_HAS_BEEN_DEFINED", "assert",
	"cudaArrayColorAttachment", "cudaArrayCubemap", "cudaArrayDefault",
	"cudaArrayDeferredMapping", "cudaArrayLayered", "cudaArraySparse",
	"cudaArraySparsePropertiesSingleMipTail", "cudaArraySurfaceLoadStore",
	"cudaArrayTextureGather", "cudaCpuDeviceId", "cudaDeviceBlockingSync",
	"cudaDeviceLmemResizeToMax", "cudaDeviceMapHost", "cudaDeviceMask",
	"cudaDeviceScheduleAuto", "cudaDeviceScheduleBlockingSync", "cudaDeviceScheduleMask",
	"cudaDeviceScheduleSpin", "cudaDeviceScheduleYield", "cudaDeviceSyncMemops",
	"cudaEventBlockingSync", "cudaEventDefault", "cudaEventDisableTiming",
	"cudaEventInterprocess", "cudaEventRecordDefault", "cudaEventRecordExternal",
	"cudaEventWaitDefault", "cudaEventWaitExternal", "cudaExternalMemoryDedicated",
	"cudaExternalSemaphoreSignalSkipNvSciBufMemSync",
	"cudaExternalSemaphoreWaitSkipNvSciBufMemSync", "cudaGraphKernelNodePortDefault",
	"cudaGraphKernelNodePortLaunchCompletion", "cudaGraphKernelNodePortProgrammatic",
	"cudaHostAllocDefault", "cudaHostAllocMapped", "cudaHostAllocPortable",
	"cudaHostAllocWriteCombined", "cudaHostRegisterDefault", "cudaHostRegisterIoMemory",
	"cudaHostRegisterMapped", "cudaHostRegisterPortable", "cudaHostRegisterReadOnly",
	"cudaInitDeviceFlagsAreValid", "cudaInvalidDeviceId", "cudaIpcMemLazyEnablePeerAccess",
	"cudaKernelNodeAttrID", "cudaKernelNodeAttrValue",
	"cudaKernelNodeAttributeAccessPolicyWindow", "cudaKernelNodeAttributeClusterDimension",
	"cudaKernelNodeAttributeClusterSchedulingPolicyPreference",
	"cudaKernelNodeAttributeCooperative",
	"cudaKernelNodeAttributeDeviceUpdatableKernelNode",
	"cudaKernelNodeAttributeMemSyncDomain", "cudaKernelNodeAttributeMemSyncDomainMap",
	"cudaKernelNodeAttributeNvlinkUtilCentricScheduling",
	"cudaKernelNodeAttributePreferredSharedMemoryCarveout",
	"cudaKernelNodeAttributePriority", "cudaMemAttachGlobal", "cudaMemAttachHost",
	"cudaMemAttachSingle", "cudaMemPoolCreateUsageHwDecompress", "cudaNvSciSyncAttrSignal",
	"cudaNvSciSyncAttrWait", "cudaOccupancyDefault", "cudaOccupancyDisableCachingOverride",
	"cudaPeerAccessDefault", "cudaStreamAttrID", "cudaStreamAttrValue",
	"cudaStreamAttributeAccessPolicyWindow", "cudaStreamAttributeMemSyncDomain",
	"cudaStreamAttributeMemSyncDomainMap", "cudaStreamAttributePriority",
	"cudaStreamAttributeSynchronizationPolicy", "cudaStreamDefault", "cudaStreamLegacy",
	"cudaStreamNonBlocking", "cudaStreamPerThread", "cudaSurfaceType1D",
	"cudaSurfaceType1DLayered", "cudaSurfaceType2D", "cudaSurfaceType2DLayered",
	"cudaSurfaceType3D", "cudaSurfaceTypeCubemap", "cudaSurfaceTypeCubemapLayered",
	"cudaTextureType1D", "cudaTextureType1DLayered", "cudaTextureType2D",
	"cudaTextureType2DLayered", "cudaTextureType3D", "cudaTextureTypeCubemap",
	"cudaTextureTypeCubemapLayered", "va_arg", "va_copy", "va_end", "va_start",
}
