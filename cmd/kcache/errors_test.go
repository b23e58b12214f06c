package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestErrorsNamedOnce drives the real command and checks the rule for what
// it prints on failure: every line names the command once, "kcache: ",
// whether the error comes from the kcache library (whose errors already
// begin so), from cobra, or from the command itself.
func TestErrorsNamedOnce(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		args []string
		want []string // stderr, line by line
	}{
		{"bad variable", []string{"KCACHE_MAX_SIZE=lots"}, []string{"build", "x.cl"},
			[]string{`kcache: KCACHE_MAX_SIZE="lots": want a size such as 4096, 512MiB or 8G`}},
		{"two bad variables", []string{"KCACHE_MAX_SIZE=lots", "KCACHE_EVICT_TO=NaN"}, []string{"build", "x.cl"},
			[]string{`kcache: KCACHE_MAX_SIZE="lots": want a size such as 4096, 512MiB or 8G`,
				`kcache: KCACHE_EVICT_TO="NaN": want a fraction in (0, 1] such as 0.5 or 50%`}},
		{"unknown flag", nil, []string{"build", "--nope", "x.cl"}, []string{"kcache: unknown flag: --nope; see kcache build --help"}},
		{"unknown command", nil, []string{"nosuch"}, []string{`kcache: unknown command "nosuch" for "kcache"; see kcache --help`}},
		{"unknown root flag", nil, []string{"--nope"}, []string{"kcache: unknown flag: --nope; see kcache --help"}},
		{"argument to ls", nil, []string{"ls", "foo"}, []string{`kcache: ls takes no arguments, got "foo"; see kcache ls --help`}},
		{"not a number", nil, []string{"build", "--device", "x", "x.cl"}, []string{`kcache: --device "x": want a whole number; see kcache build --help`}},
		{"not a boolean", nil, []string{"ls", "--json=maybe"}, []string{`kcache: --json "maybe": want true or false; see kcache ls --help`}},
		{"number too large", nil, []string{"warm", "--jobs", "99999999999999999999", "x"}, []string{`kcache: --jobs "99999999999999999999": want a smaller number; see kcache warm --help`}},
		{"missing argument", nil, []string{"build"}, []string{"kcache: requires at least 1 arg(s), only received 0; see kcache build --help"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], tt.args...)
			cmd.Env = append(os.Environ(), "RUN_AS_KCACHE_CLI=1", "KCACHE_DIR="+t.TempDir())
			cmd.Env = append(cmd.Env, tt.env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit: %v, want status 2; stderr:\n%s", err, stderr.String())
			}
			got := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("stderr:\n%s\nwant:\n%s", stderr.String(), strings.Join(tt.want, "\n"))
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout: %q, want nothing", stdout.String())
			}
		})
	}
}

// TestVersion: --version and the version command print one line naming
// kcache and the Go release it was built with.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		r := run(t, t.TempDir(), args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "kcache ") || !strings.Contains(r.stdout, " go1.") || strings.Count(r.stdout, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
}

// TestEveryCommandHasExamples: each command a user runs shows examples in
// its help, as clig.dev asks.
func TestEveryCommandHasExamples(t *testing.T) {
	for _, c := range newRootCmd().Commands() {
		if c.Hidden || c.Name() == "completion" || c.Name() == "help" {
			continue
		}
		if strings.TrimSpace(c.Example) == "" || !strings.Contains(c.Example, "kcache "+c.Name()) {
			t.Errorf("kcache %s: no example of itself in its help", c.Name())
		}
	}
}
