//go:build !linux

package main

// captureStderr does nothing where descriptor 2 cannot be redirected the
// way the Linux version does: the compiler's stray lines then show as
// they are.
func captureStderr() (restore func()) { return func() {} }
