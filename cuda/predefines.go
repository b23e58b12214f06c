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

// An option's -D or -U of a name NVRTC may predefine is an assumption of
// the same kind: the scanner takes the option's definition, which holds
// where NVRTC defines its own macros before the options. For most names
// it does; __CUDA_ARCH__, __CUDACC__ and __LP64__ it defines after them
// (NVRTC 13.0 on the H100), so that -D__CUDA_ARCH__=big changes nothing
// and a key that believed it would name big.h for a computed include that
// NVRTC makes 900.h. The scanner lists each such name (deps.RuleOptionDecides), and
// the cache asks NVRTC, with the build's options and one more -D of the
// name, whether that later definition wins.

// predefineChecks remembers NVRTC's answers in this process, by options
// and names.
var predefineChecks sync.Map // string -> predefineCheck

// predefineCheck is one remembered answer: nil when every assumption held.
type predefineCheck struct{ err error }

// nvrtcAssumptions are the names a key assumes of NVRTC's own macros.
type nvrtcAssumptions struct {
	notPredefined []string // deps.RuleNotPredefined: NVRTC defines none of them
	optionDecides []string // deps.RuleOptionDecides: an option's definition wins
}

func (a nvrtcAssumptions) empty() bool { return len(a.notPredefined) == 0 && len(a.optionDecides) == 0 }

// assumptions returns what src's key assumes of NVRTC's own macros, each
// name once.
func (c *Cache) assumptions(ctx context.Context, src Source, p plan) (nvrtcAssumptions, error) {
	var a nvrtcAssumptions
	for _, in := range scanInputs(src, p) {
		_, trace, err := c.scanner.Scan(ctx, in)
		if err != nil {
			return a, err
		}
		for _, d := range trace {
			switch {
			case d.Rule == deps.RuleNotPredefined && !slices.Contains(a.notPredefined, d.Path):
				a.notPredefined = append(a.notPredefined, d.Path)
			case d.Rule == deps.RuleOptionDecides && !slices.Contains(a.optionDecides, d.Path):
				a.optionDecides = append(a.optionDecides, d.Path)
			}
		}
	}
	return a, nil
}

// checkAssumptions returns nil when NVRTC, given p's options, agrees with
// what src's key assumes of its own macros, and an error saying why the
// build may not be stored otherwise.
func (c *Cache) checkAssumptions(ctx context.Context, src Source, p plan) error {
	a, err := c.assumptions(ctx, src, p)
	if err != nil || a.empty() {
		return err
	}
	slices.Sort(a.notPredefined)
	slices.Sort(a.optionDecides)
	id := strings.Join(p.options, "\x00") + "\x01" + strings.Join(a.notPredefined, "\x00") + "\x01" + strings.Join(a.optionDecides, "\x00")
	if v, ok := predefineChecks.Load(id); ok {
		return v.(predefineCheck).err
	}
	err = probePredefines(p.options, a)
	predefineChecks.Store(id, predefineCheck{err})
	return err
}

// optionProbeValue is what the probe's extra -D gives each name whose
// option is to decide it: no compiler defines a macro so.
const optionProbeValue = "0x4B43505242"

// probePredefines compiles a program that fails if NVRTC, with options,
// defines any of a.notPredefined before the first line, or keeps its own
// definition of any of a.optionDecides over one more -D of it after the
// options.
func probePredefines(options []string, a nvrtcAssumptions) error {
	var b strings.Builder
	for _, n := range a.notPredefined {
		fmt.Fprintf(&b, "#ifdef %s\n#error kcache: predefined %s\n#endif\n", n, n)
	}
	probeOptions := slices.Clone(options)
	for _, n := range a.optionDecides {
		fmt.Fprintf(&b, "#if !defined(%s)\n#error kcache: %s undefined\n#elif %s != %s\n#error kcache: NVRTC's %s over the options'\n#endif\n", n, n, n, optionProbeValue, n)
		probeOptions = append(probeOptions, "-D"+n+"="+optionProbeValue)
	}
	prog, err := NewProgram([]byte(b.String()), "kcache_predefines.cu", nil)
	if err != nil {
		return fmt.Errorf("cuda: checking predefined macros: %w", err)
	}
	defer prog.Destroy()
	if err := prog.Compile(probeOptions); err != nil {
		log, _ := prog.Log()
		return fmt.Errorf("cuda: the key assumes NVRTC predefines none of [%s] and takes the options' definitions of [%s], and it could not confirm that: %w (%s)",
			strings.Join(a.notPredefined, ", "), strings.Join(a.optionDecides, ", "), err, strings.TrimSpace(log))
	}
	return nil
}
