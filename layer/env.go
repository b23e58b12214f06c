package main

import "github.com/kcache/kcache/internal/keyparts"

// compilerEnv is the rule for the variables that are part of a build's
// identity: the OpenCL binding's, less the loader's layer list, which
// always names the cache itself here: its presence changes no code.
var compilerEnv = keyparts.OpenCLEnv.Ignoring("OPENCL_LAYERS")
