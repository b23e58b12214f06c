# The two entry points the README names: `make demo` runs the main job and
# `make test` runs the tests. Both install what is missing first.
export PATH := $(PATH):/usr/local/go/bin
GO ?= go

.PHONY: demo test setup check build layer

setup:
	@scripts/setup

build:
	CGO_ENABLED=0 $(GO) build -o kcache ./cmd/kcache

# layer builds the OpenCL layer, libkcache-layer.so, for unmodified
# applications: OPENCL_LAYERS=$(CURDIR)/libkcache-layer.so app; and kcache
# beside it, the background worker it starts (docs/layer.md).
layer: build
	CGO_ENABLED=1 $(GO) build -buildmode=c-shared -o libkcache-layer.so ./layer

demo: setup build
	./kcache demo --plot demo.svg

# check is what CI enforces besides the tests: formatting and vet.
check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd bench && $(GO) vet ./...

# The benchmarks run once, briefly, to prove they still work; the OpenCL
# binding and the CLI run again without cgo, as users build them; the full
# race-enabled run comes last, so its summary closes the output.
test: setup check layer
	cd bench && $(GO) test -run '^$$' -bench . -benchtime 50ms ./...
	CGO_ENABLED=0 $(GO) test -timeout 20m ./opencl ./cmd/...
	$(GO) test -race -timeout 30m ./...
