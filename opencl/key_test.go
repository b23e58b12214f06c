package opencl

import (
	"errors"
	"testing"

	"github.com/kcache/kcache/objcache"
)

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
