package cuda

import (
	"bytes"
	"context"
	"runtime/trace"
	"testing"

	"github.com/kcache/kcache"
)

// TestModuleTraceRegions checks that a new cache's first request, served
// by its direct record, marks its steps in an execution trace: a trace is
// how an application sees where a request's time goes (docs/cuda.md).
func TestModuleTraceRegions(t *testing.T) {
	gpu := requireGPU(t)
	dir := t.TempDir()
	src := Source{Code: []byte(saxpySource), NameExpressions: []string{"scale<float, 3>"}}
	m, err := newTestCache(t, gpu, dir).Module(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	m.Release()
	c := newTestCache(t, gpu, dir)
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skipf("another trace runs: %v", err)
	}
	m, err = c.Module(context.Background(), src)
	trace.Stop()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	if m.Outcome != kcache.OutcomeDisk {
		t.Fatalf("outcome %v, want disk", m.Outcome)
	}
	for _, r := range []string{regionPlan, regionDirect, regionDirectName, regionDirectDecode, regionAdopt, regionDecode, regionLoad, regionConfirm, regionRemember} {
		if !bytes.Contains(buf.Bytes(), []byte(r)) {
			t.Errorf("the trace has no region %s", r)
		}
	}
}
