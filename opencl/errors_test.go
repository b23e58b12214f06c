package opencl

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestErrorFormatAndMatch(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", newError(CodeBuildProgramFailure, "clBuildProgram"))
	if got, want := err.Error(), "wrapped: opencl: clBuildProgram: CL_BUILD_PROGRAM_FAILURE (-11)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, &Error{Code: CodeBuildProgramFailure}) {
		t.Error("errors.Is by code failed")
	}
	if errors.Is(err, &Error{Code: CodeBuildProgramFailure, Func: "clLinkProgram"}) {
		t.Error("errors.Is matched a different function")
	}
	if errors.Is(err, &Error{Code: CodeInvalidBinary}) {
		t.Error("errors.Is matched a different code")
	}
	if got := CodeName(-12345); got != "CL_UNKNOWN_ERROR" {
		t.Errorf("CodeName(unknown) = %q", got)
	}
}

func TestIsOutOfMemory(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{newError(CodeMemObjectAllocationFailure, "clCreateBuffer"), true},
		{newError(CodeOutOfResources, "clEnqueueNDRangeKernel"), true},
		{fmt.Errorf("x: %w", newError(CodeOutOfHostMemory, "clBuildProgram")), true},
		{&BuildError{Err: newError(CodeOutOfHostMemory, "clBuildProgram")}, true},
		{newError(CodeInvalidBinary, "clCreateProgramWithBinary"), false},
		{errors.New("plain"), false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := IsOutOfMemory(tt.err); got != tt.want {
			t.Errorf("IsOutOfMemory(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestBuildErrorTruncatesLongLog(t *testing.T) {
	e := &BuildError{Log: strings.Repeat("x", 2*maxLogInError), Options: "-O2", Err: newError(CodeBuildProgramFailure, "clBuildProgram")}
	if len(e.Error()) > maxLogInError+200 {
		t.Errorf("Error() is %d bytes, want the log truncated", len(e.Error()))
	}
	if !strings.Contains(e.Error(), `"-O2"`) {
		t.Errorf("Error() = %.100q..., want the options", e.Error())
	}
}

func TestWorkSizes(t *testing.T) {
	tests := []struct {
		global, local []int
		ok            bool
	}{
		{[]int{64}, nil, true},
		{[]int{8, 8}, []int{4, 4}, true},
		{[]int{2, 2, 2}, []int{1, 1, 1}, true},
		{nil, nil, false},
		{[]int{1, 1, 1, 1}, nil, false},
		{[]int{8, 8}, []int{4}, false},
		{[]int{0}, nil, false},
		{[]int{-1}, nil, false},
		{[]int{8}, []int{0}, false},
	}
	for _, tt := range tests {
		g, l, err := workSizes(tt.global, tt.local)
		if (err == nil) != tt.ok {
			t.Errorf("workSizes(%v, %v) error = %v, want ok=%v", tt.global, tt.local, err, tt.ok)
			continue
		}
		if err == nil && (len(g) != len(tt.global) || (tt.local == nil) != (l == nil)) {
			t.Errorf("workSizes(%v, %v) = %v, %v", tt.global, tt.local, g, l)
		}
	}
}

func TestScalarBytes(t *testing.T) {
	tests := []struct {
		v    any
		size int
	}{
		{int8(-1), 1}, {uint8(1), 1}, {int16(1), 2}, {uint16(1), 2}, {int32(1), 4}, {uint32(1), 4},
		{float32(1), 4}, {int64(1), 8}, {uint64(1), 8}, {float64(1), 8},
	}
	for _, tt := range tests {
		b, ok := scalarBytes(tt.v)
		if !ok || len(b) != tt.size {
			t.Errorf("scalarBytes(%T) = %d bytes, %v; want %d", tt.v, len(b), ok, tt.size)
		}
	}
	for _, v := range []any{1, uint(1), "s", []byte{1}} {
		if _, ok := scalarBytes(v); ok {
			t.Errorf("scalarBytes(%T) accepted", v)
		}
	}
}
