package layerstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/internal/keyparts"
)

// Order asks the background worker to build a program the layer built in
// an application's process, and to store its binary: everything needed to
// build the same program again, exactly. On PoCL, reading a program's
// binary compiles a generic work-group function for every kernel of it,
// which costs a cold run seconds (OpenCV, clpeak); the worker pays that in
// a process of its own, at low priority, after the application has gone
// on (or exited, which a program never launched nor released does).
//
// An order is only a request: the worker recomputes the key from its own
// build's inputs, and stores under it only if it is the order's Key, so
// that a false or stale order (a header edited since, another device)
// costs a build and stores nothing.
type Order struct {
	// Key is the digest of the key the layer computed and looked up.
	Key kcache.Digest
	// Format is the key's image format (FormatBuild).
	Format string
	// Source is the program's source, the application's strings joined.
	Source []byte
	// Options are the build options.
	Options string
	// Dir is the application's working directory, which PoCL's compiler
	// searches for headers first.
	Dir string
	// Env is the environment that enters the key or the build (BuildEnv).
	Env []string
	// Device is the identity of the device, as the driver reported it.
	Device keyparts.OpenCLDevice
	// Log is the driver's build log in the ordering process, which the
	// entry replays on a hit: the worker's own log of the same build names
	// its own scratch files (PoCL's warnings give the path of the source
	// file it wrote). It is what the application saw; the binary is what
	// the worker built and keyed itself.
	Log string
	// PID is the process that wrote the order, for the worker's log.
	PID int
}

// orderMagic starts every order file; orderVersion is in it.
var orderMagic = []byte("kcache-layer-order-1\n")

// maxOrder bounds an order's size: a program's source is kilobytes to a
// few megabytes; anything larger is damage.
const maxOrder = 64 << 20

// ErrOrder reports an order file that is not one: damaged, truncated,
// written by something else.
var ErrOrder = errors.New("kcache layer: malformed build order")

// Encode returns the order's file form: the magic line, the SHA-256 of the
// payload, and the payload (JSON). The checksum makes a torn or damaged
// file an error rather than an order for another program.
func (o Order) Encode() ([]byte, error) {
	payload, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("kcache layer: encoding a build order: %w", err)
	}
	sum := sha256.Sum256(payload)
	out := append(bytes.Clone(orderMagic), sum[:]...)
	return append(out, payload...), nil
}

// DecodeOrder parses what Encode wrote, and checks that the order can be
// acted on: a key, a known format, an absolute working directory, and
// environment entries of the form NAME=value. Anything else is an error
// wrapping ErrOrder.
func DecodeOrder(b []byte) (Order, error) {
	if len(b) > maxOrder {
		return Order{}, fmt.Errorf("%w: %d bytes", ErrOrder, len(b))
	}
	rest, ok := bytes.CutPrefix(b, orderMagic)
	if !ok || len(rest) < sha256.Size {
		return Order{}, fmt.Errorf("%w: no header", ErrOrder)
	}
	sum, payload := rest[:sha256.Size], rest[sha256.Size:]
	if got := sha256.Sum256(payload); !bytes.Equal(got[:], sum) {
		return Order{}, fmt.Errorf("%w: checksum mismatch", ErrOrder)
	}
	var o Order
	if err := json.Unmarshal(payload, &o); err != nil {
		return Order{}, fmt.Errorf("%w: %w", ErrOrder, err)
	}
	if err := o.check(); err != nil {
		return Order{}, err
	}
	return o, nil
}

// check refuses an order the worker could not act on.
func (o Order) check() error {
	switch {
	case o.Key == kcache.Digest{}:
		return fmt.Errorf("%w: no key", ErrOrder)
	case o.Format != FormatBuild:
		return fmt.Errorf("%w: format %q", ErrOrder, o.Format)
	case !filepath.IsAbs(o.Dir):
		return fmt.Errorf("%w: working directory %q", ErrOrder, o.Dir)
	}
	for _, kv := range o.Env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || strings.ContainsRune(kv, 0) {
			return fmt.Errorf("%w: environment entry %q", ErrOrder, kv)
		}
	}
	return nil
}

// buildVarPrefixes and buildVars name the variables an order carries: the
// drivers' families (which CompilerEnv keys, and PoCL's settings of where
// its caches go, which the build needs), kcache's own (which cache), and
// those that say where a driver and its caches are.
var (
	buildVarPrefixes = []string{"POCL_", "CL_CONFIG_", "OCL_ICD_", "OPENCL_", "KCACHE_"}
	buildVars        = map[string]bool{"LD_LIBRARY_PATH": true, "HOME": true, "XDG_CACHE_HOME": true, "TMPDIR": true}
)

// IsBuildVar reports whether an order carries the variable name; the
// layer list OPENCL_LAYERS never: the worker must not load the layer; nor
// the remote tier's settings, its secret above all: the worker stores in
// the disk tier only, and an order is a file.
func IsBuildVar(name string) bool {
	if name == "OPENCL_LAYERS" || strings.HasPrefix(name, "KCACHE_REMOTE") {
		return false
	}
	if buildVars[name] {
		return true
	}
	for _, p := range buildVarPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// BuildEnv returns the entries of environ an order carries (IsBuildVar).
func BuildEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); IsBuildVar(name) {
			out = append(out, kv)
		}
	}
	return out
}

// WorkerEnv returns the environment the worker builds an order in: base
// (the worker's own) without any variable an order carries, then the
// order's. Variables of the worker's first starter that are not the
// order's must not reach the build.
func WorkerEnv(base []string, o Order) []string {
	var out []string
	for _, kv := range base {
		if name, _, _ := strings.Cut(kv, "="); !IsBuildVar(name) && name != "OPENCL_LAYERS" {
			out = append(out, kv)
		}
	}
	return append(out, o.Env...)
}
