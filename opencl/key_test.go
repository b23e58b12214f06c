package opencl

import (
	"errors"
	"reflect"
	"testing"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/objcache"
)

func TestCompilerEnv(t *testing.T) {
	env := []string{"HOME=/root", "POCL_CACHE_DIR=/tmp/x", "POCL_KERNEL_CACHE=0", "POCL_DEBUG=all",
		"POCL_WORK_GROUP_METHOD=cbs", "POCL_EXTRA_BUILD_FLAGS=-O0", "CL_CONFIG_USE_VECTORIZER=False", "KCACHE_DIR=/c"}
	got := compilerEnv(env)
	want := []kcache.EnvVar{{Name: "POCL_WORK_GROUP_METHOD", Value: "cbs"}, {Name: "POCL_EXTRA_BUILD_FLAGS", Value: "-O0"},
		{Name: "CL_CONFIG_USE_VECTORIZER", Value: "False"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("compilerEnv = %v, want %v", got, want)
	}
}

func TestClassify(t *testing.T) {
	var c Cache
	oom := &BuildError{Err: &Error{Code: CodeOutOfHostMemory, Func: "clBuildProgram"}}
	compile := &BuildError{Log: "error: x", Err: &Error{Code: CodeBuildProgramFailure, Func: "clBuildProgram"}}
	other := &Error{Code: CodeInvalidValue, Func: "clCreateProgramWithSource"}
	if err := c.classify(oom); !errors.Is(err, objcache.ErrOutOfMemory) {
		t.Errorf("out of memory while building: %v, want ErrOutOfMemory", err)
	}
	if err := c.classify(compile); err != error(compile) || objcache.IsTransient(err) {
		t.Errorf("compile error must be kept as is, got %v", err)
	}
	if err := c.classify(other); !objcache.IsTransient(err) {
		t.Errorf("other failure must be transient, got %v", err)
	}
}
