package main

import "github.com/kcache/kcache/internal/layerstore"

// compilerEnv is the rule for the variables that are part of a build's
// identity, which the background worker keys by too.
var compilerEnv = layerstore.CompilerEnv
