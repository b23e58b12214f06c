package keyparts

import (
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/kcache/kcache"
)

// EnvRule says which environment variables are part of a build's identity:
// those of the Prefixes families that drivers read to change their
// compilers' output, less the Irrelevant names known to change no code.
// An unknown variable of those families therefore costs at worst a
// spurious rebuild, never a stale binary; naming a variable Irrelevant is
// a claim that needs checking against the driver's source.
type EnvRule struct {
	Prefixes   []string
	Irrelevant map[string]bool
}

// Select returns the variables of environ (os.Environ's form) that the
// rule keeps, in environ's order.
func (r EnvRule) Select(environ []string) []kcache.EnvVar {
	var out []kcache.EnvVar
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if r.Irrelevant[name] || !slices.ContainsFunc(r.Prefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		out = append(out, kcache.EnvVar{Name: name, Value: value})
	}
	return out
}

// Ignoring returns a copy of the rule that also leaves out names.
func (r EnvRule) Ignoring(names ...string) EnvRule {
	irrelevant := maps.Clone(r.Irrelevant)
	if irrelevant == nil {
		irrelevant = map[string]bool{}
	}
	for _, n := range names {
		irrelevant[n] = true
	}
	return EnvRule{Prefixes: slices.Clone(r.Prefixes), Irrelevant: irrelevant}
}

// Environ returns env, or the process's environment where env is nil: a
// cache's options name the environment its keys see, nil meaning its own.
func Environ(env []string) []string {
	if env == nil {
		return os.Environ()
	}
	return env
}
