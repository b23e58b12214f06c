package deps_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// The differential check of difftest_real_test.go on three more trees
// nobody here wrote, each built as its own users build it: pyopencl's
// kernel headers, Random123's headers used from OpenCL C, and libclc's
// headers, whose gentype.inc includes __CLC_BODY once per type after each
// header defines it to another file (Debian's python3-pyopencl,
// librandom123-dev, libclc-15-dev).

// treeProgram is one program of a tree: its text (PoCL's temporary file)
// and the options its host passes.
type treeProgram struct {
	name, text, options string
}

// requireTree returns dir, or skips (fails under KCACHE_REQUIRE_REAL=1)
// when the package that installs it is missing.
func requireTree(t *testing.T, dir, pkg string) {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
			t.Fatalf("KCACHE_REQUIRE_REAL=1 but %s is missing (apt-get install %s)", dir, pkg)
		}
		t.Skipf("%s is missing (apt-get install %s)", dir, pkg)
	}
}

// checkTree writes each program's text to a file of its own and runs the
// differential check on them from a working directory unrelated to the
// tree, as an application's.
func checkTree(t *testing.T, progs []treeProgram, within string) {
	clang := requireClang(t)
	src := t.TempDir()
	wd := t.TempDir()
	var kernels []realKernel
	for i, p := range progs {
		path := filepath.Join(src, fmt.Sprintf("%02d-%s.cl", i, p.name))
		if err := os.WriteFile(path, []byte(p.text), 0o644); err != nil {
			t.Fatal(err)
		}
		kernels = append(kernels, realKernel{path: path, wd: wd, options: p.options})
	}
	checkReal(t, clang, kernels, within)
}

// pyopenclCL is where Debian's python3-pyopencl puts the headers
// pyopencl's own kernels include.
const pyopenclCL = "/usr/lib/python3/dist-packages/pyopencl/cl"

// TestDifferentialPyOpenCL checks the preambles pyopencl 2022.3 builds
// (clrandom.py, elementwise.py, reduction.py): each is compiled with
// "-I <pyopencl>/cl" after the caller's options, and with
// -DPYOPENCL_USING_OCLGRIND on Oclgrind.
func TestDifferentialPyOpenCL(t *testing.T) {
	requireTree(t, pyopenclCL, "python3-pyopencl")
	inc := "-I " + pyopenclCL
	const kern = "\n__kernel void k(__global float *o) { o[get_global_id(0)] = 1.0f; }\n"
	cdouble := "#if __OPENCL_C_VERSION__ < 120\n#pragma OPENCL EXTENSION cl_khr_fp64: enable\n#endif\n#define PYOPENCL_DEFINE_CDOUBLE\n"
	progs := []treeProgram{
		{"random123", "#include <pyopencl-random123/philox.cl>\n#include <pyopencl-random123/threefry.cl>\n" + kern, inc},
		{"philox", "#include <pyopencl-random123/philox.cl>\n" + kern, "-cl-fast-relaxed-math " + inc},
		{"threefry", "#include <pyopencl-random123/threefry.cl>\n" + kern, inc + " -D PYOPENCL_USING_OCLGRIND"},
		{"ranlux", "#include <pyopencl-ranluxcl.cl>\n" + kern, inc},
		{"complex", "#include <pyopencl-complex.h>\n" + kern, inc},
		{"cdouble", cdouble + "#include <pyopencl-complex.h>\n" + kern, inc},
		{"bessel-j", cdouble + "#include <pyopencl-bessel-j.cl>\n" + kern, inc},
		{"bessel-y", cdouble + "#include <pyopencl-bessel-y.cl>\n" + kern, inc},
		{"bessel-j-complex", cdouble + "#include <pyopencl-complex.h>\n#include <pyopencl-bessel-j-complex.cl>\n" + kern, inc},
		{"hankel", cdouble + "#include <pyopencl-complex.h>\n#include <pyopencl-hankel-complex.cl>\n" + kern, inc},
		{"airy", cdouble + "#include <pyopencl-airy.cl>\n" + kern, inc},
		{"eval-tbl", cdouble + "#include <pyopencl-eval-tbl.cl>\n" + kern, inc},
	}
	checkTree(t, progs, pyopenclCL)
}

// random123Dir is where Debian's librandom123-dev puts Random123.
const random123Dir = "/usr/include/Random123"

// TestDifferentialRandom123 checks Random123's headers as an OpenCL
// program uses them (its examples' "-I" to the include root, angled or
// quoted, some with the knobs its features headers test).
func TestDifferentialRandom123(t *testing.T) {
	requireTree(t, random123Dir, "librandom123-dev")
	inc := "-I /usr/include"
	const kern = "\n__kernel void k(__global uint *o) { o[get_global_id(0)] = 1u; }\n"
	var progs []treeProgram
	for _, h := range []string{"philox.h", "threefry.h", "ars.h", "aes.h", "u01fixedpt.h", "array.h"} {
		progs = append(progs,
			treeProgram{h, "#include <Random123/" + h + ">\n" + kern, inc},
			treeProgram{h + "-quoted", "#include \"Random123/" + h + "\"\n" + kern, inc + " -DR123_USE_64BIT=0 -DR123_USE_PHILOX_64BIT=0"},
		)
	}
	progs = append(progs, treeProgram{"features", "#include <Random123/features/compilerfeatures.h>\n" + kern, "-I" + random123Dir + " -I /usr/include"})
	checkTree(t, progs, random123Dir)
}

// libclcDir is where Debian's libclc-15-dev puts libclc's headers.
const libclcDir = "/usr/include/clc"

// TestDifferentialLibclc checks libclc's headers: clc.h includes some 250
// headers, most of which define __CLC_BODY to a file and include
// gentype.inc or floatn.inc, which include __CLC_BODY once per type; as
// libclc builds its library (-Dcl_clang_storage_class_specifiers, the
// extension macros of the target) and one header at a time. As PoCL 3.1
// runs clang (PoCLFrontEnd), 7 of the 13 do not build: PoCL's
// _builtin_renames.h, included before the program, renames the builtins
// (fract is _cl_fract), so the includes of gentype.inc and floatn.inc of
// a file named after the function find none (clc/math/_cl_fract.inc);
// the other 6 are exact.
func TestDifferentialLibclc(t *testing.T) {
	requireTree(t, libclcDir, "libclc-15-dev")
	inc := "-I /usr/include -Dcl_clang_storage_class_specifiers"
	const kern = "\n__kernel void k(__global float *o) { o[get_global_id(0)] = 1.0f; }\n"
	progs := []treeProgram{
		{"clc", "#include <clc/clc.h>\n" + kern, inc},
		{"clc-fp64", "#include <clc/clc.h>\n" + kern, inc + " -Dcl_khr_fp64 -Dcl_khr_fp16 -Dcl_khr_int64_base_atomics"},
		{"clc-quoted", "#include \"clc/clc.h\"\n" + kern, "-I/usr/include"},
	}
	for _, h := range []string{"math/fabs.h", "math/sincos.h", "integer/abs.h", "geometric/dot.h", "relational/isequal.h", "convert.h", "shared/vload.h", "atomic/atomic_add.h", "async/async_work_group_copy.h", "image/image.h"} {
		progs = append(progs, treeProgram{filepath.Base(h), "#include <clc/clcfunc.h>\n#include <clc/clctypes.h>\n#include <clc/" + h + ">\n" + kern, inc})
	}
	checkTree(t, progs, libclcDir)
}
