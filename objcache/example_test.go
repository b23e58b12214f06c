package objcache_test

import (
	"context"
	"fmt"

	"github.com/kcache/kcache/objcache"
)

// program stands for a runtime object such as a cl_program.
type program struct{ name string }

func ExampleCache_GetOrBuild() {
	programs := objcache.New[string, *program](objcache.Options[*program]{
		Threshold: 64 << 20, // keep at most 64 MiB of programs
		Release:   func(p *program) { fmt.Println("released", p.name) },
	})
	build := func(ctx context.Context) (*program, int64, error) {
		fmt.Println("building")
		return &program{name: "vector_add"}, 4096, nil
	}
	for range 2 {
		h, err := programs.GetOrBuild(context.Background(), "vector_add", build)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("using", h.Value().name)
		h.Release()
	}
	fmt.Println(programs.Len(), "program,", programs.Size(), "bytes")
	programs.Close()
	// Output:
	// building
	// using vector_add
	// using vector_add
	// 1 program, 4096 bytes
	// released vector_add
}
