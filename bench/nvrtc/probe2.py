# Which non-reserved names does NVRTC 13 define on its own (its built-in header)?
import ctypes, glob, os, re, json
OUT = os.environ.get("OUT", "/tmp/out"); CUDA = "/usr/local/cuda"
nv = ctypes.CDLL([l for l in glob.glob(CUDA + "/lib64/libnvrtc.so*") if re.search(r"\.so\.\d+$", l)][0])
def compile(src, opts):
    prog = ctypes.c_void_p()
    nv.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"p.cu", 0, None, None)
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    r = nv.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t(); nv.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    b = ctypes.create_string_buffer(n.value); nv.nvrtcGetProgramLog(prog, b)
    nv.nvrtcDestroyProgram(ctypes.byref(prog)); return r, b.value.decode(errors="replace")
names = set()
for dp, dn, fn in os.walk(os.path.realpath(CUDA + "/include")):
    for f in fn:
        try: t = open(os.path.join(dp, f), errors="replace").read()
        except Exception: continue
        names |= set(re.findall(r"^\s*#\s*define\s+([A-Za-z]\w*)", t, re.M))
names = sorted(n for n in names if not (n.startswith("__") or (n[0] == "_" and n[1:2].isupper())))
found = {}
for opts in (["-arch=sm_90", "-std=c++17"], []):
    got = set()
    for i in range(0, len(names), 60):
        ch = names[i:i+60]
        src = "".join('#ifdef %s\nstatic_assert(false, "DEFINED %s");\n#endif\n' % (n, n) for n in ch)
        r, log = compile(src, opts)
        got |= set(re.findall(r'DEFINED (\w+)', log))
    found[" ".join(opts)] = sorted(got)
json.dump({"probed": len(names), "defined": found}, open(OUT + "/probe2.json", "w"), indent=1)
print("probed", len(names), {k: (len(v), v[:200]) for k, v in found.items()})
