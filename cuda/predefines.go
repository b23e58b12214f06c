package cuda

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/kcache/kcache/deps"
)

// Where the files a key was computed from define a reserved name only in
// conditionals (Thrust's __THRUST_HOST_SYSTEM_NAMESPACE, on one branch of
// an #if chain that has no #else), the name keeps NVRTC's own value
// wherever none of those definitions is certain to have been made. The
// dependency scanner cannot know that value; it assumes there is none and
// lists the assumption in the key (deps.RuleNotPredefined), and the cache
// asks NVRTC, with the build's options, before it stores a build made
// under it. The answer depends only on NVRTC and the options, which the
// key holds, so one check at the build vouches for every later hit.

// predefineChecks remembers NVRTC's answers in this process, by options
// and names.
var predefineChecks sync.Map // string -> predefineCheck

// predefineCheck is one remembered answer: nil when NVRTC predefines none
// of the names.
type predefineCheck struct{ err error }

// assumptions returns the names src's key assumes NVRTC does not
// predefine, each once.
func (c *Cache) assumptions(ctx context.Context, src Source, p plan) ([]string, error) {
	var names []string
	for _, in := range scanInputs(src, p) {
		_, trace, err := c.scanner.Scan(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, d := range trace {
			if d.Rule == deps.RuleNotPredefined && !slices.Contains(names, d.Path) {
				names = append(names, d.Path)
			}
		}
	}
	return names, nil
}

// checkAssumptions returns nil when NVRTC, given p's options, predefines
// none of the names src's key assumes it does not, and an error saying
// why the build may not be stored otherwise.
func (c *Cache) checkAssumptions(ctx context.Context, src Source, p plan) error {
	names, err := c.assumptions(ctx, src, p)
	if err != nil || len(names) == 0 {
		return err
	}
	slices.Sort(names)
	id := strings.Join(p.options, "\x00") + "\x01" + strings.Join(names, "\x00")
	if v, ok := predefineChecks.Load(id); ok {
		return v.(predefineCheck).err
	}
	err = probePredefines(p.options, names)
	predefineChecks.Store(id, predefineCheck{err})
	return err
}

// probePredefines compiles a program that fails if NVRTC, with options,
// defines any of names before the first line.
func probePredefines(options []string, names []string) error {
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "#ifdef %s\n#error kcache: predefined %s\n#endif\n", n, n)
	}
	prog, err := NewProgram([]byte(b.String()), "kcache_predefines.cu", nil)
	if err != nil {
		return fmt.Errorf("cuda: checking predefined macros: %w", err)
	}
	defer prog.Destroy()
	if err := prog.Compile(options); err != nil {
		log, _ := prog.Log()
		return fmt.Errorf("cuda: the key assumes NVRTC predefines none of %s, and it could not confirm that: %w (%s)",
			strings.Join(names, ", "), err, strings.TrimSpace(log))
	}
	return nil
}
