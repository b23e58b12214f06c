package cuda

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/metrics"
	"runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
)

// stepClock timestamps the steps of one traced warm start, and every
// debug record the cache logs meanwhile (the dependency record's read,
// decode and stats come as one, from package deps).
type stepClock struct {
	start time.Time
	mu    sync.Mutex
	steps []traceStep // guarded by mu
}

// traceStep is one timestamp of a traced warm start: At is ms from the
// start of the phase, Took the step's own ms.
type traceStep struct {
	Step  string         `json:"step"`
	At    float64        `json:"at_ms"`
	Took  float64        `json:"took_ms,omitempty"`
	Attrs map[string]any `json:"attrs,omitempty"`
}

func newStepClock() *stepClock { return &stepClock{start: time.Now()} }

func msBetween(a, b time.Time) float64 { return float64(b.Sub(a).Nanoseconds()) / 1e6 }

// mark records a step that began at from and ends now.
func (c *stepClock) mark(step string, from time.Time) time.Time {
	now := time.Now()
	c.mu.Lock()
	c.steps = append(c.steps, traceStep{Step: step, At: msBetween(c.start, now), Took: msBetween(from, now)})
	c.mu.Unlock()
	return now
}

// Enabled, Handle, WithAttrs and WithGroup make a stepClock a slog
// handler that keeps every record as a step.
func (c *stepClock) Enabled(context.Context, slog.Level) bool { return true }

func (c *stepClock) Handle(_ context.Context, r slog.Record) error {
	at := msBetween(c.start, time.Now())
	attrs := map[string]any{}
	r.Attrs(func(a slog.Attr) bool {
		v := a.Value.Resolve()
		if v.Kind() == slog.KindDuration {
			attrs[a.Key] = float64(v.Duration().Nanoseconds()) / 1e6
		} else {
			attrs[a.Key] = v.String()
		}
		return true
	})
	c.mu.Lock()
	c.steps = append(c.steps, traceStep{Step: "log: " + r.Message, At: at, Attrs: attrs})
	c.mu.Unlock()
	return nil
}

func (c *stepClock) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *stepClock) WithGroup(string) slog.Handler      { return c }

// processStart holds what the trace phase's process paid to load the
// driver and NVRTC, before the traced warm start.
var processStart map[string]float64

// gcCycles returns the collector's completed cycles and the bytes
// allocated so far.
func gcCycles() (cycles, allocated uint64) {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// tracedWarmStart is the "trace" phase of TestCCCLNewProcess: the steps
// of Cache.Module's hit path done one by one in a new process, each
// timed, with the cache's debug log, the collector's cycles and the bytes
// allocated; with KCACHE_CCCL_RTRACE set, a runtime trace of it is
// written to that directory. It fails unless the key came from the
// dependency record and the binary from the disk tier.
func tracedWarmStart(t *testing.T, gpu *Context, dir, kernel string, src Source, launch func(*Function)) {
	if d := os.Getenv("KCACHE_CCCL_RTRACE"); d != "" {
		f, err := os.Create(filepath.Join(d, kernel+".trace"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			t.Fatal(err)
		}
		defer trace.Stop()
	}
	ctx := context.Background()
	gc0, alloc0 := gcCycles()
	clock := newStepClock()
	t0 := clock.start
	cfg, err := kcache.LoadConfig(func(c *kcache.Config) { c.Dir = filepath.Join(dir, "cache"); c.Persistent = true })
	if err != nil {
		t.Fatal(err)
	}
	st, err := disk.Open(disk.FromConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	t0 = clock.mark("disk.Open", t0)
	bins := kcache.New(cfg, slog.New(clock), kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	c, err := NewCache(gpu, bins, CacheOptions{Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t0 = clock.mark("NewCache", t0)
	p, err := c.plan(src)
	if err != nil {
		t.Fatal(err)
	}
	ins := scanInputs(src, p)
	t0 = clock.mark("plan", t0)
	scanned, err := c.scanned(ctx, nil, src, p)
	if err != nil {
		t.Fatal(err)
	}
	t0 = clock.mark("scan", t0)
	c.id.files()
	t0 = clock.mark("compiler files wait", t0)
	prep := c.keyWith(src, p, append(memoryHeaders(src), scanned...)).Prepare()
	t0 = clock.mark("key prepared", t0)
	r, err := c.bins.GetLocal(ctx, prep)
	if err != nil {
		t.Fatalf("no hit in the disk tier: %v", err)
	}
	t0 = clock.mark("disk get", t0)
	im, err := decodeImage(r.Binary)
	if err != nil {
		t.Fatal(err)
	}
	t0 = clock.mark("image decode", t0)
	m, err := c.ctx.LoadModule(im.code, c.jit)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unload()
	t0 = clock.mark("LoadModule", t0)
	f, err := m.Function("k")
	if err != nil {
		t.Fatal(err)
	}
	t0 = clock.mark("Function", t0)
	launch(f)
	clock.mark("launch+sync", t0)
	gc1, alloc1 := gcCycles()
	if predefineProbes() != 0 {
		t.Errorf("%s: a warm start compiled %d predefine probes", kernel, predefineProbes())
	}
	for _, s := range clock.steps {
		// A scanner that logs none (before the log was added) is taken
		// at its word: the warm phase's outcome says the key held.
		if strings.HasPrefix(s.Step, "log: deps: dependency record") && s.Step != "log: deps: dependency record holds" {
			t.Errorf("%s: the key did not come from the dependency record: %v", kernel, clock.steps)
		}
	}
	fmt.Println(mustJSON(map[string]any{"trace": kernel, "inputs": len(ins), "headers": len(scanned), "binary_bytes": len(r.Binary),
		"gc_cycles": gc1 - gc0, "process": processStart, "alloc_kb": (alloc1 - alloc0) >> 10, "steps": clock.steps}))
}
