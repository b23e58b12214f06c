package deps

import (
	"slices"
	"strings"
	"testing"
)

// TestPoCLFrontEndShape pins PoCLFrontEnd to what PoCL 3.1 logged on this
// machine (POCL_DEBUG=llvm, "all build options: ...") for three builds:
// no options (PoCL's own -cl-std=CL3.0 and the 3.0 features), a
// -cl-std=CL1.2 of the build's (neither), and options behind a tab, which
// PoCL's first split keeps in one token (the -cl-std=CLC++ still counts
// as text, -g after a blank is rewritten, -cl-uniform-work-group-size
// dropped). Beyond the log come PIC and PoCL's five headers, each an
// -include after the build's.
func TestPoCLFrontEndShape(t *testing.T) {
	for _, tc := range []struct{ options, logged string }{
		{"",
			"-Dcl_khr_int64 -DPOCL_DEVICE_ADDRESS_BITS=64 -D__USE_CLANG_OPENCL_C_H -xcl -Dinline= -I. -cl-kernel-arg-info -opaque-pointers  -D__ENDIAN_LITTLE__=1 -D__IMAGE_SUPPORT__=1 -DCL_DEVICE_MAX_GLOBAL_VARIABLE_SIZE=0 -D__OPENCL_VERSION__=300 -cl-std=CL3.0 -D__OPENCL_C_VERSION__=300 -Dcl_khr_byte_addressable_store=1 -Dcl_khr_global_int32_base_atomics=1 -Dcl_khr_global_int32_extended_atomics=1 -Dcl_khr_local_int32_base_atomics=1 -Dcl_khr_local_int32_extended_atomics=1 -Dcl_khr_3d_image_writes=1 -Dcl_khr_command_buffer=1 -Dcl_khr_spir=1 -Dcl_khr_int64_base_atomics=1 -Dcl_khr_int64_extended_atomics=1 -Dcl_khr_fp64=1 -D__opencl_c_3d_image_writes=1 -D__opencl_c_images=1 -D__opencl_c_atomic_order_acq_rel=1 -D__opencl_c_atomic_order_seq_cst=1 -D__opencl_c_atomic_scope_device=1 -D__opencl_c_read_write_images=1 -D__opencl_c_int64=1 -D__opencl_c_fp64=1 -cl-ext=-all,+cl_khr_byte_addressable_store,+cl_khr_global_int32_base_atomics,+cl_khr_global_int32_extended_atomics,+cl_khr_local_int32_base_atomics,+cl_khr_local_int32_extended_atomics,+cl_khr_3d_image_writes,+cl_khr_command_buffer,+cl_khr_spir,+cl_khr_int64_base_atomics,+cl_khr_int64_extended_atomics,+cl_khr_fp64,+__opencl_c_3d_image_writes,+__opencl_c_images,+__opencl_c_atomic_order_acq_rel,+__opencl_c_atomic_order_seq_cst,+__opencl_c_atomic_scope_device,+__opencl_c_read_write_images,+__opencl_c_int64,+__opencl_c_fp64 -fno-builtin -triple=x86_64-pc-linux-gnu -target-cpu skylake-avx512"},
		{"-cl-std=CL1.2 -I inc -D X=1",
			"-Dcl_khr_int64 -DPOCL_DEVICE_ADDRESS_BITS=64 -D__USE_CLANG_OPENCL_C_H -xcl -Dinline= -I. -cl-kernel-arg-info -opaque-pointers -cl-std=CL1.2 -I inc -D X=1 -D__ENDIAN_LITTLE__=1 -D__IMAGE_SUPPORT__=1 -DCL_DEVICE_MAX_GLOBAL_VARIABLE_SIZE=0 -D__OPENCL_VERSION__=300 -D__OPENCL_C_VERSION__=120 -Dcl_khr_byte_addressable_store=1 -Dcl_khr_global_int32_base_atomics=1 -Dcl_khr_global_int32_extended_atomics=1 -Dcl_khr_local_int32_base_atomics=1 -Dcl_khr_local_int32_extended_atomics=1 -Dcl_khr_3d_image_writes=1 -Dcl_khr_command_buffer=1 -Dcl_khr_spir=1 -Dcl_khr_int64_base_atomics=1 -Dcl_khr_int64_extended_atomics=1 -Dcl_khr_fp64=1 -cl-ext=-all,+cl_khr_byte_addressable_store,+cl_khr_global_int32_base_atomics,+cl_khr_global_int32_extended_atomics,+cl_khr_local_int32_base_atomics,+cl_khr_local_int32_extended_atomics,+cl_khr_3d_image_writes,+cl_khr_command_buffer,+cl_khr_spir,+cl_khr_int64_base_atomics,+cl_khr_int64_extended_atomics,+cl_khr_fp64 -fno-builtin -triple=x86_64-pc-linux-gnu -target-cpu skylake-avx512"},
		{"-DA\t-cl-std=CLC++ -cl-fast-relaxed-math -g -cl-denorms-are-zero -cl-uniform-work-group-size",
			"-Dcl_khr_int64 -DPOCL_DEVICE_ADDRESS_BITS=64 -D__USE_CLANG_OPENCL_C_H -xcl -Dinline= -I. -cl-kernel-arg-info -opaque-pointers -D__FAST_RELAXED_MATH__=1 -DA\t-cl-std=CLC++ -cl-fast-relaxed-math -debug-info-kind=limited -dwarf-version=4 -debugger-tuning=gdb -fdenormal-fp-math=positive-zero -D__ENDIAN_LITTLE__=1 -D__IMAGE_SUPPORT__=1 -DCL_DEVICE_MAX_GLOBAL_VARIABLE_SIZE=0 -D__OPENCL_VERSION__=300 -D__OPENCL_C_VERSION__=1850 -Dcl_khr_byte_addressable_store=1 -Dcl_khr_global_int32_base_atomics=1 -Dcl_khr_global_int32_extended_atomics=1 -Dcl_khr_local_int32_base_atomics=1 -Dcl_khr_local_int32_extended_atomics=1 -Dcl_khr_3d_image_writes=1 -Dcl_khr_command_buffer=1 -Dcl_khr_spir=1 -Dcl_khr_int64_base_atomics=1 -Dcl_khr_int64_extended_atomics=1 -Dcl_khr_fp64=1 -D__opencl_c_3d_image_writes=1 -D__opencl_c_images=1 -D__opencl_c_atomic_order_acq_rel=1 -D__opencl_c_atomic_order_seq_cst=1 -D__opencl_c_atomic_scope_device=1 -D__opencl_c_read_write_images=1 -D__opencl_c_int64=1 -D__opencl_c_fp64=1 -cl-ext=-all,+cl_khr_byte_addressable_store,+cl_khr_global_int32_base_atomics,+cl_khr_global_int32_extended_atomics,+cl_khr_local_int32_base_atomics,+cl_khr_local_int32_extended_atomics,+cl_khr_3d_image_writes,+cl_khr_command_buffer,+cl_khr_spir,+cl_khr_int64_base_atomics,+cl_khr_int64_extended_atomics,+cl_khr_fp64,+__opencl_c_3d_image_writes,+__opencl_c_images,+__opencl_c_atomic_order_acq_rel,+__opencl_c_atomic_order_seq_cst,+__opencl_c_atomic_scope_device,+__opencl_c_read_write_images,+__opencl_c_int64,+__opencl_c_fp64 -fno-builtin -triple=x86_64-pc-linux-gnu -target-cpu skylake-avx512"},
	} {
		args, err := PoCLFrontEnd(tc.options)
		if err != nil {
			t.Fatalf("%q: %v", tc.options, err)
		}
		i := slices.Index(args, poclFrontSet[0])
		if args[0] != "-cc1" || i < 0 {
			t.Fatalf("%q: %q", tc.options, args)
		}
		if got, want := strings.Fields(strings.Join(args[1:i], " ")), strings.Fields(tc.logged); !slices.Equal(got, want) {
			t.Errorf("%q:\n got %q\nwant %q", tc.options, got, want)
		}
		rest := args[i+len(poclFrontSet):]
		if len(rest) != 2*len(poclHeaders) || rest[len(rest)-1] != poclIncludeDir()+"/_kernel.h" {
			t.Errorf("%q: after PIC %q", tc.options, rest)
		}
	}
}
