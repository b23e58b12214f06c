package main

import (
	"slices"
	"strings"

	"github.com/kcache/kcache"
)

// irrelevantEnv lists variables of the drivers' families that do not
// change generated code (where caches and logs go, thread counts). Every
// other variable of those families is part of the key: an unknown one
// costs at worst a spurious rebuild.
var irrelevantEnv = map[string]bool{
	"POCL_CACHE_DIR": true, "POCL_KERNEL_CACHE": true, "POCL_DEBUG": true,
	"POCL_DEBUG_LLVM_PASSES": true, "POCL_LEAVE_KERNEL_COMPILER_TEMP_FILES": true,
	"POCL_AFFINITY": true, "POCL_MAX_PTHREAD_COUNT": true, "POCL_CPU_MAX_CU_COUNT": true,
	"POCL_MEMORY_LIMIT": true, "POCL_TRACING": true, "POCL_TRACING_OPT": true,
	"POCL_TRACING_FILTER": true, "POCL_STARTUP_DELAY": true, "POCL_SIGFPE_HANDLER": true,
	"POCL_IMPLICIT_FINISH": true, "POCL_DUMP_TASK_GRAPHS": true,
	"POCL_KERNEL_COMPILER_DEBUG_DIRECTORIES": true,
	// The loader's layer list: the cache's own presence changes no code.
	"OPENCL_LAYERS": true,
}

// codegenEnvPrefixes are the variable families drivers read to change their
// compilers' output, or that pick another driver altogether.
var codegenEnvPrefixes = []string{"POCL_", "CL_CONFIG_", "OCL_ICD_", "OPENCL_"}

// compilerEnv returns the variables of environ that are part of a build's
// identity.
func compilerEnv(environ []string) []kcache.EnvVar {
	var out []kcache.EnvVar
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if irrelevantEnv[name] || !slices.ContainsFunc(codegenEnvPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		out = append(out, kcache.EnvVar{Name: name, Value: value})
	}
	return out
}
