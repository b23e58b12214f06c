package opencl

import (
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/kcache/kcache"
)

// initEnv is the process's environment as it was when this package first
// asked a driver for its devices: PoCL reads its variables then, once
// (pocl_init_devices, at the first clGetDeviceIDs), and not again, so a
// variable the application sets later (os.Setenv) changes the key of a
// cache that reads the environment at each key, and not PoCL's build.
// Where the driver read it decides its temporary directory, and so its
// first search place (scanInput), and each variable read then joins the
// key beside its value now (withInitEnv). nil until then.
var initEnv struct {
	once sync.Once
	env  []string
}

// noteDeviceInit takes the snapshot, once, just before the first
// clGetDeviceIDs.
func noteDeviceInit() { initEnv.once.Do(func() { initEnv.env = os.Environ() }) }

// deviceInitEnv returns the snapshot, nil before the first device query.
func deviceInitEnv() []string {
	noteDeviceInit() // a cache is made from devices: this only ever reads
	return initEnv.env
}

// lookupIn returns os.LookupEnv's answer over env.
func lookupIn(env []string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], name+"="); ok {
				return v, true
			}
		}
		return "", false
	}
}

// atDeviceInit marks a variable as it was at device init, where that
// differs from its value now: the key then holds both, so it changes
// whether the driver reads the variable at init or at each build.
const atDeviceInit = " (at device init)"

// unsetAtInit is the value of a variable that was unset at device init.
const unsetAtInit = "\x00unset"

// withInitEnv returns now, the key's variables, with those of atInit that
// differ from now's under their names marked by atDeviceInit (a variable
// set only later marked as unset then).
func withInitEnv(now, atInit []kcache.EnvVar) []kcache.EnvVar {
	out := now
	for _, v := range atInit {
		if !slices.Contains(now, v) {
			out = append(out, kcache.EnvVar{Name: v.Name + atDeviceInit, Value: v.Value})
		}
	}
	for _, v := range now {
		if !slices.ContainsFunc(atInit, func(w kcache.EnvVar) bool { return w.Name == v.Name }) {
			out = append(out, kcache.EnvVar{Name: v.Name + atDeviceInit, Value: unsetAtInit})
		}
	}
	return out
}
