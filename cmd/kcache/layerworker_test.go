package main

import (
	"slices"
	"testing"

	"github.com/kcache/kcache/internal/layerstore"
)

// TestOrderEnv: an order's process gets PoCL's kernel cache as the
// application had it (on when it did not say, PoCL's default, which the
// command would otherwise turn off), and with it off a PoCL directory of
// its own, never the application's private one; and PWD names the
// order's directory, not the worker starter's.
func TestOrderEnv(t *testing.T) {
	base := []string{"PATH=/bin", "PWD=/starter", "POCL_KERNEL_CACHE=0", "POCL_CACHE_DIR=/dev/shm/kcache-pocl-1", "KCACHE_DIR=/elsewhere"}
	for _, c := range []struct {
		name  string
		order []string
		want  []string
	}{
		{"unset", []string{"KCACHE_DIR=/c", "HOME=/h"}, []string{"PATH=/bin", "KCACHE_DIR=/c", "HOME=/h", "PWD=/w", "POCL_KERNEL_CACHE=1"}},
		{"on", []string{"KCACHE_DIR=/c", "POCL_KERNEL_CACHE=1", "POCL_CACHE_DIR=/p"}, []string{"PATH=/bin", "KCACHE_DIR=/c", "POCL_KERNEL_CACHE=1", "POCL_CACHE_DIR=/p", "PWD=/w"}},
		{"off", []string{"KCACHE_DIR=/c", "POCL_KERNEL_CACHE=0", "POCL_CACHE_DIR=/tmp/kcache-pocl-0/42"}, []string{"PATH=/bin", "KCACHE_DIR=/c", "POCL_KERNEL_CACHE=0", "PWD=/w"}},
	} {
		got := orderEnv(slices.Clone(base), layerstore.Order{Env: c.order, Dir: "/w"})
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: orderEnv = %q, want %q", c.name, got, c.want)
		}
	}
}
