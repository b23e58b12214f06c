# For each kernel: the files NVRTC 13 opens (LD_PRELOAD shim) and nvcc -M's list.
import ctypes, glob, os, re, sys, json, subprocess
OUT = os.environ.get("OUT", "/tmp/out"); HERE = os.path.dirname(os.path.abspath(__file__))
CUDA = "/usr/local/cuda"; INC = os.path.realpath(CUDA + "/include")
opts = ["-I" + INC + "/cccl", "-I" + INC, "-std=c++17", "-arch=sm_90"]
if len(sys.argv) > 2 and sys.argv[1] == "one":
    path = sys.argv[2]
    lib = [l for l in glob.glob(CUDA + "/lib64/libnvrtc.so*") if re.search(r"\.so\.\d+$", l)][0]
    nv = ctypes.CDLL(lib)
    src = open(path).read()
    prog = ctypes.c_void_p()
    nv.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), os.path.basename(path).encode(), 0, None, None)
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    os.environ["SHIM_LOG"] = sys.argv[3]
    r = nv.nvrtcCompileProgram(prog, len(opts), arr)
    os.environ.pop("SHIM_LOG")
    n = ctypes.c_size_t(); nv.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value); nv.nvrtcGetProgramLog(prog, buf)
    print(json.dumps({"rc": r, "log": buf.value.decode(errors="replace")[:3000]}))
    sys.exit(0)
res = {}
os.makedirs("/tmp/k", exist_ok=True)
for k in sorted(glob.glob(HERE + "/../../deps/testdata/cccl/*.cu")):
    name = os.path.basename(k)
    dst = "/tmp/k/" + name
    open(dst, "w").write(open(k).read())
    logf = "/tmp/k/" + name + ".log"
    if os.path.exists(logf): os.remove(logf)
    env = dict(os.environ, LD_PRELOAD=HERE + "/shim.so")
    p = subprocess.run([sys.executable, __file__, "one", dst, logf], capture_output=True, text=True, cwd="/tmp/k", env=env)
    try: info = json.loads(p.stdout.strip().splitlines()[-1])
    except Exception: info = {"rc": "?", "log": p.stdout[-500:] + p.stderr[-1500:]}
    opened, probed = set(), set()
    if os.path.exists(logf):
        for line in open(logf):
            op, ok, path = line.rstrip("\n").split(" ", 2)
            if "/tmp/k" in path or path.startswith(INC) or path.startswith(CUDA) or not path.startswith("/"):
                (opened if ok == "1" and op.startswith(("open", "fopen")) else probed).add(path)
    m = subprocess.run(["nvcc", "-M", "-std=c++17", "-arch=sm_90", "-I", INC + "/cccl", "-I", INC, dst], capture_output=True, text=True, cwd="/tmp/k")
    files = [f for f in m.stdout.replace("\\\n", " ").split(":", 1)[-1].split()]
    res[name] = {"nvrtc_rc": info["rc"], "nvrtc_log": info["log"][:1500], "nvrtc_opened": sorted(opened), "nvrtc_probed": sorted(probed - opened), "nvcc_M": files, "nvcc_rc": m.returncode, "nvcc_err": m.stderr[-800:]}
    print(name, "nvrtc rc", info["rc"], "opened", len(opened), "probed", len(probed), "nvcc -M", len(files), "rc", m.returncode)
json.dump(res, open(OUT + "/trace.json", "w"), indent=1)
