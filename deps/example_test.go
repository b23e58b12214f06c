package deps_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kcache/kcache/deps"
)

// A kernel that includes its headers through macros of its build options,
// as hashcat's do: the scanner expands the include as the compiler would,
// and records the places searched before the header was found.
func ExampleScanner_Scan() {
	dir, _ := os.MkdirTemp("", "deps-example")
	defer os.RemoveAll(dir)
	os.Mkdir(filepath.Join(dir, "OpenCL"), 0o755)
	os.WriteFile(filepath.Join(dir, "OpenCL", "inc_hash.h"), []byte("#define ROUNDS 64\n"), 0o644)

	src := []byte("#include M2S(INCLUDE_PATH/inc_hash.h)\n__kernel void k() {}\n")
	opts := `-I OpenCL -D INCLUDE_PATH=OpenCL -D "XM2S(x)=#x" -D "M2S(x)=XM2S(x)"`
	s := deps.NewScanner(nil)
	headers, trace, err := s.Scan(context.Background(), deps.Input{
		Source:        src,
		WorkDir:       dir,
		Args:          deps.SplitOptions(opts),
		SearchWorkDir: true, // PoCL searches the working directory first
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range trace {
		rel, _ := filepath.Rel(dir, d.Path)
		fmt.Println(d.Rule, d.Name, rel)
	}
	fmt.Println(len(headers), "header in the key")
	// Output:
	// computed-include OpenCL/inc_hash.h OpenCL/inc_hash.h
	// 1 header in the key
}

// SplitOptions splits build options as a shell would, so quoted macro
// definitions stay whole.
func ExampleSplitOptions() {
	fmt.Printf("%q\n", deps.SplitOptions(`-D "M2S(x)=XM2S(x)" -I 'my headers' -DN=4`))
	// Output: ["-D" "M2S(x)=XM2S(x)" "-I" "my headers" "-DN=4"]
}
