package flight

import "sync/atomic"

// A build runs on a goroutine of its own, but not always a new one: an idle
// goroutine kept from an earlier build takes it where there is one. A new
// goroutine starts on a small stack and grows it, copying it at each step,
// as the build goes deep: a disk read, a driver call through purego. On
// the H100 that growth cost a warm start's load of a CUDA module about
// 15 µs, a third of its cost over the floor (bench/RESULTS-cuda.md, issue
// 18). A kept goroutine keeps its stack until the garbage collector
// shrinks it.

// maxIdle bounds the goroutines kept waiting for a build: as many as the
// builds a process starts at once on a warm start, and few enough to cost
// nothing (a parked goroutine holds only its stack).
const maxIdle = 8

var (
	// jobs hands a build to an idle goroutine. It is unbuffered: a send
	// succeeds only when one is waiting to receive.
	jobs = make(chan func())
	idle atomic.Int32 // goroutines waiting on jobs, or about to
)

// spawn runs job on an idle kept goroutine, or on a new one.
func spawn(job func()) {
	select {
	case jobs <- job:
	default:
		go work(job)
	}
}

// work runs job, then waits for the next one, unless maxIdle goroutines
// wait already. A job that calls runtime.Goexit ends its goroutine; run
// has made sure its callers are told. A job that leaves its goroutine
// locked to its OS thread (runtime.LockOSThread without the unlock) leaves
// the builds after it on that thread: the CUDA backend's calls set their
// context on every call, and lock and unlock in pairs.
func work(job func()) {
	for {
		job()
		job = nil // keep nothing of the last build while idle
		if idle.Add(1) > maxIdle {
			idle.Add(-1)
			return
		}
		job = <-jobs
		idle.Add(-1)
	}
}
