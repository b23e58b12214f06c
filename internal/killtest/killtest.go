// Package killtest kills helper processes where they say they stand, for
// the tests of crash safety: a helper prints a line at the point where it
// is to die, and the test SIGKILLs it there.
package killtest

import (
	"bufio"
	"os/exec"
	"syscall"
	"testing"
)

// AfterLine starts cmd, a helper process that prints a line where it
// stops to be killed, reads that line, and SIGKILLs it there. err is the
// read's: a helper that exits without the line returns what it printed.
func AfterLine(t testing.TB, cmd *exec.Cmd) (string, error) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	return line, err
}
