package deps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDirStatsIsObserve: a stat relative to an opened directory answers as
// os.Stat of the full path does, for every kind of place a scan observes,
// in runs long enough to open the directory and alone: files, directories,
// links to each, a dangling link, a FIFO, places under a missing
// directory, under a file (ENOTDIR), under a link to a directory, through
// "..", and paths dirStats leaves to a full stat. It closes every
// directory it opened.
func TestDirStatsIsObserve(t *testing.T) {
	files := map[string]string{"top.h": ""}
	for i := range 6 {
		files[fmt.Sprintf("d/h%d.h", i)] = strings.Repeat("x", i)
	}
	root := tree(t, files)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("h0.h", filepath.Join(root, "d/lf")))
	must(os.Symlink("nowhere", filepath.Join(root, "d/dangling")))
	must(os.Symlink(".", filepath.Join(root, "d/self")))
	must(syscall.Mkfifo(filepath.Join(root, "d/fifo"), 0o644))
	must(os.Symlink("d", filepath.Join(root, "ld")))
	must(os.Symlink("top.h", filepath.Join(root, "lfile")))
	var names []string
	run := func(dir string, bases ...string) {
		for _, b := range bases {
			names = append(names, dir+"/"+b)
		}
	}
	run("d", "h0.h", "h1.h", "missing.h", "lf", "dangling", "self", "fifo", "h2.h", "h3.h")
	run("ld", "h0.h", "h4.h", "nothere.h", "h5.h")        // a link to a directory
	run("nodir", "a.h", "b.h", "c.h", "d.h", "e.h")       // a directory that does not exist
	run("top.h", "a.h", "b.h", "c.h", "d.h")              // a file taken for a directory
	run("lfile", "a.h", "b.h", "c.h", "d.h")              // a link to a file, likewise
	run("d/../d", "h0.h", "h1.h", "h2.h", "h3.h", "h4.h") // as the compiler opens it, not cleaned
	run("d/self", "h0.h", "self", "h1.h", "h2.h", "fifo") // through a link to "."
	run("ld/nodir", "a.h", "b.h", "c.h", "d.h")           // missing under a link
	run("d", "h4.h", ".", "..", "h5.h")                   // "." and ".." left to a full stat
	// Names no C string holds whole (a NUL) or past the kernel's limit,
	// beside the name buffer's own: each must answer as os.Stat does.
	run("d", "h0.h", "h1.h\x00x", "h2.h", strings.Repeat("n", 255), strings.Repeat("n", 256), strings.Repeat("n", 300), "h3.h")
	names = append(names, "top.h", "d/", "d", "d/h0.h", "ld") // alone: no run
	now := time.Now()
	seen := make([]observation, len(names))
	for i, n := range names {
		seen[i].path = root + "/" + n
	}
	// Unbounded, then within budgets of descriptors that leave some
	// places, or all, to full stats.
	for _, budget := range []int{-1, 0, 1, 2} {
		fds := openFDs(t)
		var dirs dirStats
		if budget >= 0 {
			dirs.budget = &descriptorBudget{}
			dirs.budget.once.Do(func() {})
			dirs.budget.left.Store(int64(budget))
		}
		most := 0
		for i := range seen {
			path := seen[i].path
			fi, err := os.Stat(path)
			want := observe(path, fi, err, now)
			if got := dirs.observe(seen, i, now); got != want {
				t.Errorf("budget %d: %s: relative stat %+v, os.Stat %+v", budget, names[i], got, want)
			}
			most = max(most, openFDs(t)-fds)
		}
		switch {
		case budget < 0 && most == 0:
			t.Errorf("no directory was opened: the relative stats were not tested")
		case budget >= 0 && most > budget:
			t.Errorf("budget %d: %d directories open at once", budget, most)
		}
		dirs.close()
		if left := openFDs(t) - fds; left != 0 {
			t.Errorf("budget %d: %d descriptors left open after close", budget, left)
		}
		if budget >= 0 && dirs.budget.left.Load() != int64(budget) {
			t.Errorf("budget %d: %d left after close", budget, dirs.budget.left.Load())
		}
	}
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(ents)
}

// TestLargeMemoSeesEdits: a memo large enough to be checked in parallel,
// with relative stats (the production stat, no test hook), sees every
// kind of change a record must catch: a header edited, a file created
// where the scan found none (shadowing, in a search directory that did
// not exist), a directory of headers replaced by a copy, one removed.
func TestLargeMemoSeesEdits(t *testing.T) {
	files := map[string]string{}
	var src strings.Builder
	for d := range 3 {
		for i := range 40 {
			name := fmt.Sprintf("lib%d/h%d.h", d, i)
			files["b/"+name] = fmt.Sprintf("#define V_%d_%d %d\n", d, i, i)
			fmt.Fprintf(&src, "#include <%s>\n", name)
		}
	}
	for _, c := range []struct {
		name string
		edit func(root string) error
	}{
		{"edited", func(root string) error {
			return os.WriteFile(filepath.Join(root, "b/lib1/h20.h"), []byte("#define V_1_20 99\n"), 0o644)
		}},
		{"shadowed", func(root string) error {
			if err := os.MkdirAll(filepath.Join(root, "a/lib2"), 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(root, "a/lib2/h39.h"), nil, 0o644)
		}},
		{"directory replaced", func(root string) error {
			if err := os.Rename(filepath.Join(root, "b/lib0"), filepath.Join(root, "old")); err != nil {
				return err
			}
			return os.CopyFS(filepath.Join(root, "b/lib0"), os.DirFS(filepath.Join(root, "old")))
		}},
		{"directory removed", func(root string) error { return os.RemoveAll(filepath.Join(root, "b/lib2")) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := tree(t, files)
			in := Input{Source: []byte(src.String()), WorkDir: root, Args: []string{"-Ia", "-Ib"}}
			s := NewScanner(nil)
			s.fs.now = func() time.Time { return time.Now().Add(time.Minute) }
			if _, _, err := s.Scan(context.Background(), in); err != nil {
				t.Fatal(err)
			}
			m := s.memos.get(inputID(in, root))
			if len(m.seen) <= 2*statChunk {
				t.Fatalf("%d observations: too few to check in parallel", len(m.seen))
			}
			if !m.valid(s.fs) {
				t.Fatal("the memo does not hold before the edit")
			}
			// The check opens directories: the relative stats are the
			// ones tested.
			fds := openFDs(t)
			var dirs dirStats
			for i := range m.seen {
				dirs.observe(m.seen, i, time.Now())
			}
			if openFDs(t) == fds {
				t.Fatal("no directory opened for the memo's places")
			}
			dirs.close()
			if err := c.edit(root); err != nil {
				t.Fatal(err)
			}
			if m.valid(s.fs) {
				t.Errorf("the memo holds after the edit")
			}
		})
	}
}
