package cuda

import (
	"errors"
	"testing"
)

// requireGPU returns the primary context of device 0, or skips the test
// where there is no driver, no GPU or no NVRTC: CI machines have none.
func requireGPU(t testing.TB) *Context {
	t.Helper()
	dev, err := GetDevice(0)
	if errors.Is(err, ErrNoDriver) || errors.Is(err, ErrNoDevice) {
		t.Skipf("no GPU: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := LoadNVRTC(); errors.Is(err, ErrNoNVRTC) {
		t.Skipf("no NVRTC: %v", err)
	}
	ctx, err := PrimaryContext(dev)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Release() })
	return ctx
}

// devBuffer allocates a device buffer holding data, freed at cleanup.
func devBuffer(t testing.TB, ctx *Context, data []byte) DevicePtr {
	t.Helper()
	p, err := ctx.Alloc(len(data))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Free(p) })
	if err := ctx.CopyToDevice(p, data); err != nil {
		t.Fatal(err)
	}
	return p
}

// saxpySource has an extern "C" kernel and a template instantiated through
// name expressions.
const saxpySource = `
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = a * x[i] + y[i];
}
template <typename T, int K>
__global__ void scale(T* v, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) v[i] = v[i] * K;
}
`

// launchK launches m's kernel k on one block of the given threads with
// args, and waits for it.
func launchK(ctx *Context, m interface {
	Function(string) (*Function, error)
}, threads int, args ...any) error {
	f, err := m.Function("k")
	if err != nil {
		return err
	}
	s, err := ctx.NewStream()
	if err != nil {
		return err
	}
	defer s.Destroy()
	if err := f.Launch(s, Dim(1), Dim(threads), 0, args...); err != nil {
		return err
	}
	return s.Synchronize()
}
