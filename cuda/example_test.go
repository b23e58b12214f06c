package cuda_test

import (
	"context"
	"fmt"
	"log"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/cuda"
	"github.com/kcache/kcache/disk"
)

// Example compiles a templated kernel through the cache (NVRTC on the
// first run, the disk tier afterwards), then launches it. It needs a GPU,
// so it is compiled but not run by `go test`.
func Example() {
	cfg, err := kcache.LoadConfig()
	if err != nil {
		log.Fatal(err)
	}
	st, err := disk.Open(disk.FromConfig(cfg))
	if err != nil {
		log.Fatal(err)
	}
	bins := kcache.New(cfg, nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	dev, err := cuda.GetDevice(0)
	if err != nil {
		log.Fatal(err) // wraps cuda.ErrNoDriver or cuda.ErrNoDevice where there is no GPU
	}
	gpu, err := cuda.PrimaryContext(dev)
	if err != nil {
		log.Fatal(err)
	}
	defer gpu.Release()
	cache, err := cuda.NewCache(gpu, bins, cuda.CacheOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer cache.Close()
	m, err := cache.Module(context.Background(), cuda.Source{
		Code: []byte(`template <int K> __global__ void scale(float* v, int n) {
			int i = blockIdx.x * blockDim.x + threadIdx.x;
			if (i < n) v[i] *= K;
		}`),
		Path:            "scale.cu",
		NameExpressions: []string{"scale<3>"},
	})
	if err != nil {
		log.Fatal(err) // a *cuda.CompileError carries NVRTC's log
	}
	defer m.Release()
	const n = 1 << 20
	v, err := gpu.Alloc(4 * n)
	if err != nil {
		log.Fatal(err)
	}
	defer gpu.Free(v)
	f, err := m.Function("scale<3>")
	if err != nil {
		log.Fatal(err)
	}
	if err := f.Launch(nil, cuda.Dim(n/256), cuda.Dim(256), 0, v, int32(n)); err != nil {
		log.Fatal(err)
	}
	if err := gpu.Synchronize(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Outcome, m.Format())
}
