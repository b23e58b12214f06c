package opencl_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/kcache/kcache/opencl"
)

// Example builds a kernel from source on the first OpenCL device, keeps its
// binary (what a cache stores), and runs it.
func Example() {
	if err := opencl.Load(); err != nil {
		fmt.Println(err) // names the packages to install
		return
	}
	devs, err := opencl.AllDevices()
	if err != nil || len(devs) == 0 {
		fmt.Println("no device:", err)
		return
	}
	dev := devs[0]
	ctx, err := opencl.NewContext(dev)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Release()
	prog, err := ctx.ProgramWithSource(`__kernel void square(__global float* v) {
		size_t i = get_global_id(0); v[i] = v[i] * v[i]; }`)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer prog.Release()
	if err := prog.Build(nil, "-cl-fast-relaxed-math"); err != nil {
		var be *opencl.BuildError
		if errors.As(err, &be) {
			fmt.Println("compiler said:", be.Log)
		}
		return
	}
	bins, _ := prog.Binaries() // store these; ProgramWithBinary skips the compiler next time
	fmt.Printf("%s: %d-byte binary\n", dev.Name(), len(bins[0]))

	q, err := ctx.NewQueue(dev)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer q.Release()
	in := []float32{1, 2, 3, 4}
	data := make([]byte, 0, 16)
	for _, f := range in {
		data = binary.NativeEndian.AppendUint32(data, math.Float32bits(f))
	}
	buf, err := ctx.NewBufferFrom(opencl.MemReadWrite, data)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer buf.Release()
	k, err := prog.NewKernel("square")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer k.Release()
	if err := k.SetArg(0, buf); err != nil {
		fmt.Println(err)
		return
	}
	ev, err := q.Run(k, []int{len(in)}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ev.Release()
	if err := ev.Wait(); err != nil {
		fmt.Println(err)
		return
	}
	if err := q.Read(buf, 0, data); err != nil {
		fmt.Println(err)
		return
	}
	out := make([]float32, len(in))
	for i := range out {
		out[i] = math.Float32frombits(binary.NativeEndian.Uint32(data[4*i:]))
	}
	fmt.Println(out) // [1 4 9 16]
}

// ExampleIsOutOfMemory shows how a caller tells memory pressure, worth an
// eviction and a retry, from a real failure.
func ExampleIsOutOfMemory() {
	err := fmt.Errorf("building: %w", &opencl.Error{Code: opencl.CodeOutOfResources, Func: "clBuildProgram"})
	fmt.Println(opencl.IsOutOfMemory(err))
	fmt.Println(err)
	// Output:
	// true
	// building: opencl: clBuildProgram: CL_OUT_OF_RESOURCES (-5)
}
