package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/internal/demo/suite"
	"github.com/kcache/kcache/opencl"
)

// phaseResult is one case's result in one phase of the demo, as a phase
// process reports it to the demo on its standard output.
type phaseResult struct {
	Case     string  `json:"case"`
	Category string  `json:"category"`
	Outcome  string  `json:"outcome,omitempty"`
	MS       float64 `json:"ms"` // time to the first correct result
	// ProgramMS is the part of MS until the program was built: through
	// the cache, the key, the lookup and the load; for the floor, the
	// load alone. The rest of MS is the same work in both.
	ProgramMS float64 `json:"program_ms"`
	CommitMS  float64 `json:"commit_ms"` // storing the binary, after the result
	Error     string  `json:"error,omitempty"`
}

// Phase modes: through the cache (its tiers as configured by the
// environment), or the floor: a program made from a binary already in
// memory, which is what any cache can at best achieve.
const (
	modeCache = "cache"
	modeFloor = "floor"
)

func runPhase(ctx context.Context, out io.Writer, mode, include string, only []string) error {
	// The demo commits each program after its case ran, so the delay only
	// matters if a case fails before that.
	sess, err := host.OpenSession(demoDevice, time.Hour)
	if err != nil {
		return err
	}
	defer sess.Close()
	q, err := sess.Context.NewQueue(sess.Device)
	if err != nil {
		return err
	}
	defer q.Release()
	enc := json.NewEncoder(out)
	var held heldUntilEnd
	defer held.release()
	for _, c := range selectCases(only) {
		src := opencl.Source{Code: []byte(c.Source), Options: c.BuildOptions(include)}
		c.PrepareReference() // outside the timed region: it is not what a cache saves
		var r phaseResult
		if mode == modeFloor {
			r = runFloor(ctx, sess, q, c, src, &held)
		} else {
			r = runCached(ctx, sess, q, c, src)
		}
		r.Case, r.Category = c.Name, c.Category
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

func selectCases(only []string) []suite.Case {
	all := suite.All()
	if len(only) == 0 {
		return all
	}
	return slices.DeleteFunc(all, func(c suite.Case) bool { return !slices.Contains(only, c.Name) })
}

// runCached times a case from the request for its program to its checked
// result, through the cache.
func runCached(ctx context.Context, sess *Session, q *opencl.Queue, c suite.Case, src opencl.Source) phaseResult {
	start := time.Now()
	p, err := sess.Cache.Program(ctx, sess.Device, src)
	if err != nil {
		return phaseResult{Error: err.Error()}
	}
	defer p.Release()
	programMS := msSince(start)
	kernels := func(name string) (*opencl.Kernel, error) {
		k, err := p.Kernel(name)
		if err != nil {
			return nil, err
		}
		return k.Raw(), nil
	}
	err = execute(sess.Context, q, kernels, c)
	r := phaseResult{Outcome: phaseOutcome(sess, p.Outcome), MS: msSince(start), ProgramMS: programMS}
	if err != nil {
		r.Error = err.Error()
		return r
	}
	commit := time.Now()
	p.Commit(ctx)
	r.CommitMS = msSince(commit)
	return r
}

// phaseOutcome names where a phase's program came from. With no tier
// kcache only passes the build on, and the driver's own cache (the peer
// phases') may have served it: "built" would claim a compile that did not
// happen.
func phaseOutcome(sess *Session, o kcache.Outcome) string {
	if o == kcache.OutcomeBuilt && sess.PassThrough {
		return "driver's own cache"
	}
	return o.String()
}

// runFloor reads the case's binary from the cache untimed, then times what
// remains: program from that binary, build, kernels, run, check. The
// program and its kernels are held until the phase ends, as an
// application holds its programs and as the cached phases' object tier
// does: a floor that released each program let the next case's load reuse
// its memory (PoCL's copy of the binary took a tenth of the page faults),
// which no process that keeps its programs gets.
func runFloor(ctx context.Context, sess *Session, q *opencl.Queue, c suite.Case, src opencl.Source, held *heldUntilEnd) phaseResult {
	key, err := sess.Cache.Key(sess.Device, src)
	if err != nil {
		return phaseResult{Error: err.Error()}
	}
	stored, err := sess.Bins.Get(ctx, key)
	if err != nil {
		return phaseResult{Error: fmt.Sprintf("no stored binary for the floor: %v", err)}
	}
	bin := stored.Binary
	start := time.Now()
	prog, err := sess.Context.ProgramWithBinary([]opencl.Device{sess.Device}, [][]byte{bin})
	if err != nil {
		return phaseResult{Error: err.Error()}
	}
	held.add(func() { prog.Release() })
	if err := prog.Build([]opencl.Device{sess.Device}, src.Options); err != nil {
		return phaseResult{Error: err.Error()}
	}
	programMS := msSince(start)
	// Each kernel made once, as the cached path makes it: the floor must
	// not pay for a kernel object per launch.
	kernels, release := suite.ProgramKernels(prog)
	held.add(release)
	err = execute(sess.Context, q, kernels, c)
	r := phaseResult{Outcome: "floor", MS: msSince(start), ProgramMS: programMS}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

// execute runs a case's launches and checks the result against the Go
// reference.
func execute(cl *opencl.Context, q *opencl.Queue, kernels func(string) (*opencl.Kernel, error), c suite.Case) error {
	out, err := suite.Execute(cl, q, kernels, c)
	if err != nil {
		return err
	}
	if err := c.Verify(out); err != nil {
		return fmt.Errorf("wrong result: %w", err)
	}
	return nil
}

// heldUntilEnd releases what a floor phase holds, last first, when the
// phase ends.
type heldUntilEnd []func()

func (h *heldUntilEnd) add(release func()) { *h = append(*h, release) }

func (h *heldUntilEnd) release() {
	for _, f := range slices.Backward(*h) {
		f()
	}
	*h = nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }
