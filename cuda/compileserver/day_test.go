package compileserver

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// otherDayZone returns a TZ value that glibc reads as a POSIX rule (Go
// reads no such rule: its time.Local is then UTC) whose day differs from
// UTC's at now: UTC+14 in the second half of a UTC day, UTC-12 in the
// first.
func otherDayZone(now time.Time) string {
	if now.UTC().Hour() >= 12 {
		return "UTC-14"
	}
	return "UTC+12"
}

// TestDayAsTheCompilerWritesIt: a server started under TZ=UTC-14 (by hand,
// or by a client whose own sources never expand __DATE__) compiles in
// workers that inherit the zone, and their compiler writes __DATE__ in
// UTC+14, as glibc reads the rule (clang-15, calling the same localtime,
// shows it). The server checked a key's day in Go's time.Local, which is
// UTC for such a TZ: a client keyed under UTC was answered from a compile
// that wrote tomorrow's date. The server now checks the day the C library
// gives, and answers stale.
func TestDayAsTheCompilerWritesIt(t *testing.T) {
	now := time.Now()
	zone := otherDayZone(now)
	utcDay := now.UTC().Format("Jan _2 2006")
	if clang, err := exec.LookPath("clang-15"); err == nil {
		cmd := exec.Command(clang, "-E", "-P", "-x", "c", "-")
		cmd.Stdin = strings.NewReader("__DATE__\n")
		cmd.Env = append(os.Environ(), "TZ="+zone)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Trim(strings.TrimSpace(string(out)), `"`); got == utcDay && time.Now().UTC().Format("Jan _2 2006") == utcDay {
			t.Fatalf("clang-15 under TZ=%s wrote %q, UTC's day: the premise does not hold", zone, got)
		}
	} else if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
		t.Fatal("KCACHE_REQUIRE_REAL=1 but clang-15 is missing")
	}
	t.Setenv("TZ", zone)
	cl := startChild(t)
	r := compile(t, cl, request("k", File{Path: utcDay, Kind: FileDay}))
	if r.Status != StatusStale && time.Now().UTC().Format("Jan _2 2006") == utcDay {
		t.Fatalf("a key of UTC's day %s, server under TZ=%s: %v %s, want stale", utcDay, zone, r.Status, r.Message)
	}
}
