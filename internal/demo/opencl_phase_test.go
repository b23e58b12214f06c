package demo

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPhaseResultProgramMS: an OpenCL phase reports the part of its time
// that made the program (the cache's key, lookup and load, or the floor's
// load), and the progress line shows it beside the outcome, where the
// warm start's excess over the floor is looked for.
func TestPhaseResultProgramMS(t *testing.T) {
	line, err := json.Marshal(phaseResult{Case: "sgemv", Outcome: "disk", MS: 4.5, ProgramMS: 1.25})
	if err != nil {
		t.Fatal(err)
	}
	var r phaseResult
	if err := json.Unmarshal(line, &r); err != nil || r.ProgramMS != 1.25 {
		t.Fatalf("round trip of %s: %+v, %v", line, r, err)
	}
	if s := r.summary(); s.outcome != "disk" || !strings.Contains(s.note, "program 1.25 ms") {
		t.Errorf("summary %+v: the outcome must stay as it was and the note name the program's time", s)
	}
}
