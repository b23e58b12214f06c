package main

import (
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// captureStderr points file descriptor 2 at a pipe whose lines go through
// strayFilter to the real standard error, which os.Stderr then names. The
// compiler inside the OpenCL runtime (PoCL's clang) writes to descriptor
// 2 behind the command's back: "1 error generated." would otherwise
// reach the terminal outside any message, after a build log that already
// says what the error was. Descriptor 2 must be redirected, not os.Stderr
// alone, because that writer is C code in the same process.
//
// It returns a function that puts descriptor 2 back, forwards what is
// left, and restores os.Stderr. Where the redirection cannot be set up,
// nothing changes.
func captureStderr() (restore func()) {
	saved, err := unix.Dup(2)
	if err != nil {
		return func() {}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		unix.Close(saved)
		return func() {}
	}
	if err := unix.Dup3(int(pw.Fd()), 2, 0); err != nil {
		unix.Close(saved)
		pr.Close()
		pw.Close()
		return func() {}
	}
	pw.Close() // descriptor 2 now holds the pipe's write end
	orig, real := os.Stderr, os.NewFile(uintptr(saved), "/dev/stderr")
	os.Stderr = real
	// A fatal error of the Go runtime writes to descriptor 2, the pipe,
	// whose reader dies with the process: send it to the real one too.
	debug.SetCrashOutput(real, debug.CrashOptions{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		strayFilter(pr, real)
	}()
	return func() {
		unix.Dup3(saved, 2, 0) // closes the pipe's last write end: the reader sees EOF
		<-done
		pr.Close()
		debug.SetCrashOutput(nil, debug.CrashOptions{})
		os.Stderr = orig
		real.Close()
	}
}
