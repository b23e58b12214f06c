# How NVRTC resolves includes and what it predefines (kcache issue 18). Run on the GPU machine:
# python3 bench/nvrtc/probe.py; writes $OUT/probe.json.
import ctypes, glob, os, re, sys, json, subprocess
from multiprocessing import Pool
OUT = os.environ.get("OUT", "/tmp/out")
CUDA = "/usr/local/cuda"
lib = sorted(glob.glob(CUDA + "/lib64/libnvrtc.so*"))
nv = ctypes.CDLL([l for l in lib if re.search(r"\.so\.\d+$", l)][0] if any(re.search(r"\.so\.\d+$", l) for l in lib) else lib[0])
def compile(src, name="prog.cu", opts=(), cwd=None):
    if cwd: os.chdir(cwd)
    prog = ctypes.c_void_p()
    r = nv.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), name.encode(), 0, None, None)
    if r: return (-1, "create %d" % r)
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    r = nv.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t()
    nv.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value)
    nv.nvrtcGetProgramLog(prog, buf)
    nv.nvrtcDestroyProgram(ctypes.byref(prog))
    return (r, buf.value.decode(errors="replace"))
res = {}
maj, mi = ctypes.c_int(), ctypes.c_int()
nv.nvrtcVersion(ctypes.byref(maj), ctypes.byref(mi)); res["version"] = [maj.value, mi.value]
res["libs"] = lib + glob.glob(CUDA + "/lib64/libnvrtc-builtins*")
# 1. strings of the builtins library: header-like names
hdr = set()
for l in glob.glob(CUDA + "/lib64/libnvrtc-builtins.so*") + [l for l in lib if l.endswith(".so") or re.search(r"\.so\.\d+$", l)]:
    try:
        s = subprocess.run(["strings", "-n", "4", l], capture_output=True, text=True).stdout
    except Exception as e:
        s = ""; res.setdefault("errors", []).append(str(e))
    for m in re.finditer(r"[A-Za-z0-9_./-]+\.(?:h|hpp|cuh|inl)\b", s): hdr.add(m.group(0))
res["strings_headers"] = sorted(hdr)
# 2. include names resolved with no -I
std = """algorithm any array atomic barrier bit bitset cassert ccomplex cctype cerrno cfenv cfloat charconv chrono cinttypes ciso646 climits clocale cmath codecvt compare complex concepts condition_variable coroutine csetjmp csignal cstdalign cstdarg cstdbool cstddef cstdint cstdio cstdlib cstring ctgmath ctime cuchar cwchar cwctype deque exception execution expected filesystem format forward_list fstream functional future initializer_list iomanip ios iosfwd iostream istream iterator latch limits list locale map mdspan memory memory_resource mutex new numbers numeric optional ostream print queue random ranges ratio regex scoped_allocator semaphore set shared_mutex source_location span sstream stack stdexcept stop_token streambuf string string_view syncstream system_error thread tuple type_traits typeindex typeinfo unordered_map unordered_set utility valarray variant vector version
assert.h complex.h ctype.h errno.h fenv.h float.h inttypes.h iso646.h limits.h locale.h math.h setjmp.h signal.h stdalign.h stdarg.h stdatomic.h stdbool.h stddef.h stdint.h stdio.h stdlib.h string.h tgmath.h threads.h time.h uchar.h wchar.h wctype.h unistd.h features.h sys/types.h malloc.h alloca.h memory.h strings.h pthread.h intrin.h immintrin.h x86intrin.h xmmintrin.h emmintrin.h crt/host_defines.h crt/host_config.h builtin_types.h vector_types.h vector_functions.h device_types.h driver_types.h cuda_device_runtime_api.h cuda.h""".split()
names = set(std)
for f in glob.glob(CUDA + "/include/*.h") + glob.glob(CUDA + "/include/*.hpp") + glob.glob(CUDA + "/include/crt/*.h*"):
    names.add(os.path.relpath(f, CUDA + "/include"))
incre = re.compile(r'^\s*#\s*include(?:_next)?\s*([<"])([^>"]+)[>"]', re.M)
cccl_names = set()
for root in [CUDA + "/include"]:
    for dp, dn, fn in os.walk(root):
        for f in fn:
            p = os.path.join(dp, f)
            try: t = open(p, errors="replace").read()
            except Exception: continue
            for m in incre.finditer(t): cccl_names.add(m.group(2))
names |= cccl_names
names |= {n for n in hdr if "/" not in n or n.count("/") < 4}
names = sorted(names)
res["probed_names"] = len(names)
def inc(args):
    n, form = args
    src = ('#include <%s>\n' if form == "a" else '#include "%s"\n') % n
    r, log = compile(src, "probe.cu", ["-std=c++17", "-arch=sm_90"], cwd="/tmp")
    first = ""
    for line in log.splitlines():
        if "error" in line: first = line; break
    return (n, form, r, first[:200])
with Pool(16) as p:
    out = p.map(inc, [(n, f) for n in names for f in "aq"], chunksize=8)
res["includes"] = out
res["resolved_angle"] = sorted(n for n, f, r, e in out if f == "a" and r == 0)
res["resolved_quote"] = sorted(n for n, f, r, e in out if f == "q" and r == 0)
res["fail_not_found"] = sum(1 for n, f, r, e in out if r != 0 and "cannot open" in e)
res["fail_other"] = sorted(set((n, e) for n, f, r, e in out if r != 0 and "cannot open" not in e))[:300]
# 3. where quoted includes are searched: cwd, program name's directory
os.makedirs("/tmp/w/sub", exist_ok=True); os.makedirs("/tmp/w/inc", exist_ok=True)
open("/tmp/w/wdp.h", "w").write("#error FROM_CWD\n")
open("/tmp/w/sub/wdp.h", "w").write("#error FROM_NAMEDIR\n")
open("/tmp/w/inc/wdp.h", "w").write("#error FROM_INC\n")
loc = {}
for name in ["prog.cu", "sub/prog.cu", "/tmp/w/sub/prog.cu", "nosuch/prog.cu"]:
    for form in ['"wdp.h"', '<wdp.h>']:
        for opts in [[], ["-I/tmp/w/inc"], ["-no-source-include"], ["-no-source-include", "-I/tmp/w/inc"]]:
            r, log = compile("#include %s\n" % form, name, opts, cwd="/tmp/w")
            m = re.search(r"FROM_\w+|cannot open[^\n]*", log)
            loc["%s %s %s" % (name, form, " ".join(opts))] = m.group(0) if m else ("ok" if r == 0 else log[:200])
res["search"] = loc
# 4. internal headers against -I and cwd: who wins
os.makedirs("/tmp/shadow", exist_ok=True)
sh = {}
def shadow(n):
    d = os.path.join("/tmp/shadow", os.path.dirname(n)); os.makedirs(d, exist_ok=True)
    open(os.path.join("/tmp/shadow", n), "w").write("#error SHADOW_I\n")
for n in res["resolved_angle"]:
    if n.startswith("/"): continue
    shadow(n)
for n in res["resolved_angle"]:
    if n.startswith("/"): continue
    r, log = compile("#include <%s>\n" % n, "probe.cu", ["-std=c++17", "-I/tmp/shadow"], cwd="/tmp")
    r2, log2 = compile('#include "%s"\n' % n, "probe.cu", ["-std=c++17"], cwd="/tmp/shadow")
    sh[n] = ["I-wins" if "SHADOW_I" in log else ("builtin" if r == 0 else log[:120]), "cwd-wins" if "SHADOW_I" in log2 else ("builtin" if r2 == 0 else log2[:120])]
res["shadow"] = sh
# 5. predefined macros
ident = re.compile(r"\b(_[A-Za-z_]\w*)\b")
condre = re.compile(r"^\s*#\s*(?:if|ifdef|ifndef|elif|elifdef|elifndef)\b(.*)$", re.M)
defre = re.compile(r"^\s*#\s*define\s+(\w+)", re.M)
tested, defined = set(), set()
for dp, dn, fn in os.walk(CUDA + "/include"):
    for f in fn:
        try: t = open(os.path.join(dp, f), errors="replace").read()
        except Exception: continue
        t = t.replace("\\\n", " ")
        for m in condre.finditer(t): tested |= set(ident.findall(m.group(1)))
        defined |= set(defre.findall(t))
base = """__CUDACC_RTC__ __CUDACC__ __NVCC__ __CUDA_ARCH__ __CUDA_ARCH_LIST__ __cplusplus __CUDACC_VER_MAJOR__ __CUDACC_VER_MINOR__ __CUDACC_VER_BUILD__ __CUDACC_RTC_INT128__ __CUDACC_RTC_FLOAT128__ __CUDACC_DEBUG__ __CUDACC_RDC__ __CUDACC_EWP__ __CUDACC_EXTENDED_LAMBDA__ __CUDACC_RELAXED_CONSTEXPR__ __NVCC_DIAG_PRAGMA_SUPPORT__ __CUDA_ARCH_FEAT_SM90_ALL __CUDA_ARCH_SPECIFIC__ __CUDA_ARCH_FAMILY_SPECIFIC__ __USE_FAST_MATH__ __CUDA_PREC_DIV __CUDA_PREC_SQRT __CUDA_FTZ __GNUC__ __GNUC_MINOR__ __clang__ __clang_major__ _MSC_VER _WIN32 _WIN64 __linux__ __linux __unix__ __x86_64__ __aarch64__ __LP64__ _LP64 __EDG__ __EDG_VERSION__ __NVCOMPILER __INTEL_COMPILER __STDC__ __STDC_VERSION__ __STDC_HOSTED__ __SIZEOF_INT128__ __SIZEOF_POINTER__ __SIZEOF_LONG__ __CHAR_BIT__ __BYTE_ORDER__ __ORDER_LITTLE_ENDIAN__ __INT_MAX__ __LONG_MAX__ __CUDA_API_VER_MAJOR__ __CUDA_API_VERSION __cpp_exceptions __EXCEPTIONS __cpp_rtti __GXX_RTTI __cpp_constexpr __cpp_if_constexpr __cpp_concepts __cpp_lib_concepts __cpp_char8_t __cpp_inline_variables __cpp_fold_expressions __cpp_deduction_guides __cpp_variable_templates __cpp_aligned_new __cpp_sized_deallocation __cpp_noexcept_function_type __cpp_nontype_template_auto __cpp_structured_bindings __cpp_three_way_comparison __cpp_consteval __cpp_impl_three_way_comparison __cpp_conditional_explicit __cpp_nontype_template_args __cpp_decltype_auto __cpp_return_type_deduction __cpp_generic_lambdas __cpp_init_captures __cpp_lib_is_constant_evaluated __has_builtin __has_feature __has_attribute __has_cpp_attribute __has_include __OPTIMIZE__ __FAST_MATH__ __FILE__ __LINE__ __DATE__ __TIME__ __COUNTER__ __INCLUDE_LEVEL__ __BASE_FILE__ __FLT_EVAL_METHOD__ __CHAR_UNSIGNED__ __WCHAR_MAX__ __PTRDIFF_TYPE__ __SIZE_TYPE__ _GLIBCXX_RELEASE __GLIBCXX__ _LIBCPP_VERSION __ANDROID__ __APPLE__ __QNX__ __CUDACC_RTC_MINIMAL__ _NVHPC_CUDA __NVCOMPILER_CUDA__ __CUDA__ __HIP__ __HIPCC__ _NVHPC_STDPAR_CUDA __PGI __ibmxl__ __SYCL_DEVICE_ONLY__ __CUDACC_PER_THREAD_DEFAULT_STREAM__ CUDA_API_PER_THREAD_DEFAULT_STREAM __CUDA_NO_HALF_OPERATORS__ __CUDA_NO_HALF_CONVERSIONS__ __CUDA_NO_BFLOAT16_OPERATORS__""".split()
names = sorted((tested - defined) | set(base))
res["reserved_tested_undefined_in_headers"] = len(tested - defined)
optsets = {"none": [], "sm_90": ["-arch=sm_90"], "compute_80": ["-arch=compute_80"], "sm_100": ["-arch=sm_100"], "sm_90a": ["-arch=sm_90a"], "sm_75": ["-arch=sm_75"],
 "c++11": ["-std=c++11"], "c++14": ["-std=c++14"], "c++17": ["-std=c++17"], "c++20": ["-std=c++20"], "c++03": ["-std=c++03"],
 "G": ["-G"], "fastmath": ["--use_fast_math"], "rdc": ["-rdc=true"], "defdev": ["-default-device"], "int128": ["--device-int128"], "dopt": ["-dopt=on"], "ftz": ["-ftz=true"], "precdiv": ["-prec-div=false"], "ewp": ["-ewp"], "minimal": ["-minimal"], "lambda": ["--extended-lambda"], "relconst": ["--expt-relaxed-constexpr"], "lineinfo": ["-lineinfo"], "fmad": ["-fmad=false"], "float128": ["--device-float128"], "nosrc": ["-no-source-include"]}
def values(args):
    key, opts = args
    vals = {}
    for i in range(0, len(names), 40):
        chunk = names[i:i+40]
        src = "#define XSTR(x) STR(x)\n#define STR(x) #x\n" + "".join('static_assert(false, "%s=" XSTR(%s));\n' % (n, n) for n in chunk)
        r, log = compile(src, "probe.cu", opts, cwd="/tmp")
        got = dict(re.findall(r'static assertion failed with "([^"=]+)=((?:[^"\\]|\\.)*)"', log))
        for n in chunk:
            if n not in got: vals[n] = "?NOTSEEN " + (log[:160].replace("\n", " ") if not got else "")
            elif got[n] == n: vals[n] = None
            else: vals[n] = got[n]
    return key, vals
with Pool(16) as p:
    pv = dict(p.map(values, list(optsets.items())))
res["predefined"] = pv
res["optsets"] = optsets
json.dump(res, open(OUT + "/probe.json", "w"), indent=1, sort_keys=True)
print("version", res["version"], "probed", res["probed_names"], "angle-resolved", len(res["resolved_angle"]), res["resolved_angle"][:80])
print("search", json.dumps(res["search"], indent=0))
print("predef none", {k: v for k, v in pv["none"].items() if v is not None and not k.startswith("__cpp")})
