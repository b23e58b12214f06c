package deps

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStalenessLogged: where a record or this process's memo stops
// holding, the debug log names the place that changed and how, and where
// there is no record, it says so.
func TestStalenessLogged(t *testing.T) {
	root, in := recordTree(t)
	store := newMemRecords()
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	first := NewScanner(logger, WithRecords(store))
	counting(first)
	scanRecorded(t, first, in)
	if !strings.Contains(log.String(), "no dependency record") {
		t.Errorf("the first scan's log does not say there was no record:\n%s", log.String())
	}
	header := filepath.Join(root, "i2/c.h")
	write(t, header, "#define C 22\n") // one byte longer

	log.Reset()
	scanRecorded(t, first, in)
	checkStaleLog(t, log.String(), "scan of this process stale", header, "size 12 to 13")

	log.Reset()
	write(t, header, "#define C 2\n")
	second := NewScanner(logger, WithRecords(store))
	counting(second)
	scanRecorded(t, second, in)
	checkStaleLog(t, log.String(), "dependency record stale", header, "size 13 to 12")
}

// checkStaleLog checks that log holds msg, naming place and change.
func checkStaleLog(t *testing.T, log, msg, place, change string) {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, msg) {
			if !strings.Contains(line, "stale.place="+place) || !strings.Contains(line, change) {
				t.Errorf("log line does not name %s and %q:\n%s", place, change, line)
			}
			return
		}
	}
	t.Errorf("no %q in the log:\n%s", msg, log)
}

// TestStalenessDescribesEachState: each kind of change has its words.
func TestStalenessDescribesEachState(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.h")
	write(t, file, "x\n")
	fsys := osFileSystem()
	fsys.now = func() time.Time { return time.Now().Add(time.Minute) } // the file is settled
	seen := []observation{fsys.observe(file, fsys.now()), fsys.observe(filepath.Join(dir, "absent.h"), fsys.now())}
	if got := staleness(fsys, seen); got != nil {
		t.Errorf("nothing changed, staleness says %v", got)
	}
	write(t, filepath.Join(dir, "absent.h"), "")
	got := staleness(fsys, seen)
	if len(got) != 3 || got[2].Value.String() != "was absent, is a file" {
		t.Errorf("a created header: %v", got)
	}
	unsettled := []observation{{path: file, state: stateFile, id: seen[0].id}}
	if got := staleness(fsys, unsettled); len(got) != 3 || !strings.Contains(got[2].Value.String(), "too new") {
		t.Errorf("an unsettled observation: %v", got)
	}
}
