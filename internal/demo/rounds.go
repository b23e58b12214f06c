package demo

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
)

// The demos of both backends run the same way: each phase is a process of
// its own that prints one JSON line per case; the cold phases run once and
// the warm ones repeatedly, interleaved, and each case keeps its median.
// What differs is the phases and what a line holds, so the code below is
// generic over both.

// checkCaseNames rejects a --case that names no case of the suite.
func checkCaseNames(names []string, known func(string) bool) error {
	for _, name := range names {
		if !known(name) {
			return fmt.Errorf("no case named %q", name)
		}
	}
	return nil
}

// demoDir makes the demo's working directory, named with prefix; cleanup
// removes it, unless keep asks to keep it, which progress is then told.
func demoDir(prefix string, keep bool, progress io.Writer) (dir string, cleanup func(), err error) {
	dir, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	if keep {
		fmt.Fprintln(progress, "demo: keeping", dir)
		return dir, func() {}, nil
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// caseSummary is what the demo reads of one case's result in one phase,
// whichever backend ran it.
type caseSummary struct {
	name, outcome, err string
	ms                 float64
	// note follows the outcome on the progress line: where a phase's
	// time went.
	note string
}

// phaseRun is a backend's result for one case in one phase.
type phaseRun interface {
	summary() caseSummary
}

// demoStep is a backend's phase, as the rounds schedule it.
type demoStep interface {
	// step returns the phase's name and whether it is warm: warm phases
	// leave what is on disk as they found it, so they can run again.
	step() (name string, warm bool)
}

func (r phaseResult) summary() caseSummary {
	return caseSummary{r.Case, r.Outcome, r.Error, r.MS, fmt.Sprintf("(program %.2f ms)", r.ProgramMS)}
}
func (r cudaResult) summary() caseSummary { return caseSummary{r.Case, r.Outcome, r.Error, r.MS, ""} }

func (p demoPhase) step() (string, bool) { return p.name, p.warm }
func (p cudaPhase) step() (string, bool) { return p.name, p.warm }

// runRounds runs every phase through run: the cold ones once, then the
// warm ones repeat times, interleaved, so that a spell of noise on a
// shared machine (seen here: whole processes running twice as slowly)
// lands on every contender alike. It returns, per phase and case, the run
// with the median time.
func runRounds[P demoStep, R phaseRun](phases []P, repeat int, run func(P) (map[string]R, error)) (map[string]map[string]R, error) {
	runs := map[string]map[string][]R{} // phase -> case -> runs
	once := func(ph P) error {
		name, _ := ph.step()
		rs, err := run(ph)
		if err != nil {
			return fmt.Errorf("phase %s: %w", name, err)
		}
		if runs[name] == nil {
			runs[name] = map[string][]R{}
		}
		for c, r := range rs {
			runs[name][c] = append(runs[name][c], r)
		}
		return nil
	}
	for _, ph := range phases {
		if _, warm := ph.step(); !warm {
			if err := once(ph); err != nil {
				return nil, err
			}
		}
	}
	for range max(repeat, 1) {
		for _, ph := range phases {
			if _, warm := ph.step(); warm {
				if err := once(ph); err != nil {
					return nil, err
				}
			}
		}
	}
	return medians(runs), nil
}

// medians keeps, per phase and case, the median run (medianRun).
func medians[R phaseRun](runs map[string]map[string][]R) map[string]map[string]R {
	results := map[string]map[string]R{}
	for phase, cases := range runs {
		results[phase] = map[string]R{}
		for name, rs := range cases {
			results[phase][name] = medianRun(rs)
		}
	}
	return results
}

// medianRun returns the run with the median time, or a failed run if any
// failed: a wrong result once is a wrong result.
func medianRun[R phaseRun](rs []R) R {
	for _, r := range rs {
		if r.summary().err != "" {
			return r
		}
	}
	sorted := slices.SortedFunc(slices.Values(rs), func(a, b R) int { return cmp.Compare(a.summary().ms, b.summary().ms) })
	return sorted[len(sorted)/2]
}

// collectPhase starts cmd, a phase process, and collects the results it
// prints, one JSON line per case, showing progress as each case finishes:
// format has the verbs for the phase's name, the count of cases so far,
// the case, its time and its outcome or failure.
func collectPhase[R phaseRun](cmd *exec.Cmd, progress io.Writer, phase, format string) (map[string]R, error) {
	cmd.Stderr = progress
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	results := map[string]R{}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var r R
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, fmt.Errorf("bad line from phase process: %q", sc.Text())
		}
		s := r.summary()
		results[s.name] = r
		status := s.outcome
		if s.err != "" {
			status = "FAILED: " + firstLine(s.err)
		} else if s.note != "" {
			status += " " + s.note
		}
		fmt.Fprintf(progress, format, phase, len(results), s.name, s.ms, status)
	}
	if err := cmd.Wait(); err != nil {
		return nil, err
	}
	return results, nil
}

// caseCells reads one case's results phase by phase, for its row of a
// report: the row's failure is the first one met, in the order the
// phases are read.
type caseCells[R phaseRun] struct {
	results map[string]map[string]R
	name    string
	err     string
}

func cellsOf[R phaseRun](results map[string]map[string]R, name string) *caseCells[R] {
	return &caseCells[R]{results: results, name: name}
}

// ms returns the case's time in phase, noting its failure, or that it has
// no result there.
func (c *caseCells[R]) ms(phase string) float64 {
	r, ok := c.results[phase][c.name]
	s := r.summary()
	if s.err != "" && c.err == "" {
		c.err = phase + ": " + s.err
	}
	if !ok && c.err == "" {
		c.err = phase + ": no result"
	}
	return s.ms
}
