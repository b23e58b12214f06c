package keyparts

import (
	"os"
	"slices"
	"testing"

	"github.com/kcache/kcache"
)

func TestEnvRuleSelect(t *testing.T) {
	layer := OpenCLEnv.Ignoring("OPENCL_LAYERS")
	for _, tc := range []struct {
		name    string
		rule    EnvRule
		environ []string
		want    []kcache.EnvVar
	}{
		{"none", OpenCLEnv, []string{"HOME=/root", "PATH=/bin"}, nil},
		{"codegen, in order", OpenCLEnv,
			[]string{"HOME=/root", "POCL_CACHE_DIR=/tmp/x", "POCL_KERNEL_CACHE=0", "POCL_DEBUG=all", "POCL_WORK_GROUP_METHOD=cbs",
				"POCL_EXTRA_BUILD_FLAGS=-O0", "CL_CONFIG_USE_VECTORIZER=False", "KCACHE_DIR=/c"},
			[]kcache.EnvVar{{Name: "POCL_WORK_GROUP_METHOD", Value: "cbs"}, {Name: "POCL_EXTRA_BUILD_FLAGS", Value: "-O0"},
				{Name: "CL_CONFIG_USE_VECTORIZER", Value: "False"}}},
		{"driver choice", OpenCLEnv, []string{"OCL_ICD_VENDORS=/etc/x"}, []kcache.EnvVar{{Name: "OCL_ICD_VENDORS", Value: "/etc/x"}}},
		{"value with '='", OpenCLEnv, []string{"POCL_EXTRA_BUILD_FLAGS=-DA=1"}, []kcache.EnvVar{{Name: "POCL_EXTRA_BUILD_FLAGS", Value: "-DA=1"}}},
		{"layers kept by the binding", OpenCLEnv, []string{"OPENCL_LAYERS=/l.so"}, []kcache.EnvVar{{Name: "OPENCL_LAYERS", Value: "/l.so"}}},
		{"layers left out by the layer", layer, []string{"POCL_CACHE_DIR=/tmp", "POCL_KERNEL_CACHE=0", "OPENCL_LAYERS=/l.so"}, nil},
		{"cache settings", layer, []string{"KCACHE_DIR=/tmp/k", "KCACHE_DEBUG=1"}, nil},
		{"empty rule", EnvRule{}, []string{"POCL_X=1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rule.Select(tc.environ); !slices.Equal(got, tc.want) {
				t.Errorf("Select(%q) = %v, want %v", tc.environ, got, tc.want)
			}
		})
	}
}

// TestIgnoringCopies checks that a derived rule leaves the rule it came
// from as it was: the layer's rule must not change the binding's keys.
func TestIgnoringCopies(t *testing.T) {
	base := EnvRule{Prefixes: []string{"A_"}, Irrelevant: map[string]bool{"A_X": true}}
	derived := base.Ignoring("A_Y")
	if len(base.Irrelevant) != 1 || base.Irrelevant["A_Y"] {
		t.Errorf("Ignoring changed its receiver: %v", base.Irrelevant)
	}
	if !derived.Irrelevant["A_X"] || !derived.Irrelevant["A_Y"] {
		t.Errorf("derived rule ignores %v, want A_X and A_Y", derived.Irrelevant)
	}
	if got := (EnvRule{Prefixes: []string{"A_"}}).Ignoring("A_Y").Select([]string{"A_Y=1", "A_Z=2"}); !slices.Equal(got, []kcache.EnvVar{{Name: "A_Z", Value: "2"}}) {
		t.Errorf("rule without an irrelevant set, ignoring A_Y: %v", got)
	}
}

func TestEnviron(t *testing.T) {
	if got := Environ([]string{}); got == nil || len(got) != 0 {
		t.Errorf("Environ(empty) = %q, want empty: an empty environment is not the process's", got)
	}
	if got := Environ(nil); !slices.Equal(got, os.Environ()) {
		t.Errorf("Environ(nil) = %d variables, want the process's %d", len(got), len(os.Environ()))
	}
}
