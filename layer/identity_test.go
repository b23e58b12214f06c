package main

import (
	"slices"
	"testing"

	"github.com/kcache/kcache"
)

func TestCompilerEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		environ []string
		want    []kcache.EnvVar
	}{
		{"none", []string{"HOME=/root", "PATH=/bin"}, nil},
		{"codegen", []string{"POCL_WORK_GROUP_METHOD=cbs", "HOME=/root"}, []kcache.EnvVar{{Name: "POCL_WORK_GROUP_METHOD", Value: "cbs"}}},
		{"driver choice", []string{"OCL_ICD_VENDORS=/etc/x"}, []kcache.EnvVar{{Name: "OCL_ICD_VENDORS", Value: "/etc/x"}}},
		{"irrelevant", []string{"POCL_CACHE_DIR=/tmp", "POCL_KERNEL_CACHE=0", "OPENCL_LAYERS=/lib/libkcache-layer.so"}, nil},
		{"cache settings", []string{"KCACHE_DIR=/tmp/k", "KCACHE_DEBUG=1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := compilerEnv.Select(tc.environ); !slices.Equal(got, tc.want) {
				t.Errorf("compilerEnv.Select(%q) = %v, want %v", tc.environ, got, tc.want)
			}
		})
	}
}
