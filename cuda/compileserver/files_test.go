package compileserver

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// manyFiles writes n headers and names as many absent places beside
// them, as a CCCL key does (hundreds of each), interleaved.
func manyFiles(tb testing.TB, n int) []File {
	dir, err := os.MkdirTemp("", "kcsmany")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	var files []File
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprintf("d%d", i%8))
		os.MkdirAll(sub, 0o755)
		path := filepath.Join(sub, fmt.Sprintf("h%d.cuh", i))
		content := fmt.Sprintf("// header %d\n", i)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
		files = append(files, fileOf(path, content), File{Path: filepath.Join(sub, fmt.Sprintf("absent%d.h", i)), Kind: FileAbsent})
	}
	return files
}

func fileOf(path, content string) File {
	return File{Path: path, Digest: sha256.Sum256([]byte(content))}
}

// TestCheckManyFiles: over more files than one goroutine of the check
// takes, a file whose content differs from its digest anywhere in the
// list is found, as is a place that must be absent and exists, and a file
// first seen after a compile began makes that compile fresh.
func TestCheckManyFiles(t *testing.T) {
	files := manyFiles(t, 40*checkChunk)
	fc := newFileChecker()
	fc.settle = time.Millisecond
	if why := fc.check(files); why != "" {
		t.Fatalf("unchanged files: %s", why)
	}
	time.Sleep(5 * time.Millisecond)
	start := time.Now()
	if why, fresh := fc.checkSince(files, start); why != "" || fresh != "" {
		t.Fatalf("files seen and settled before the compile: %q fresh %q", why, fresh)
	}
	for _, i := range []int{0, len(files) / 2, len(files) - 2} {
		bad := append([]File(nil), files...)
		bad[i].Digest[0] ^= 1
		if why := fc.check(bad); !strings.Contains(why, bad[i].Path) {
			t.Errorf("file %d's digest changed: %q", i, why)
		}
		if why, _ := fc.checkSince(bad, start); !strings.Contains(why, bad[i].Path) {
			t.Errorf("file %d's digest changed, since: %q", i, why)
		}
	}
	last := files[len(files)-1]
	if err := os.WriteFile(last.Path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if why := fc.check(files); !strings.Contains(why, last.Path) {
		t.Errorf("an absent place made: %q", why)
	}
	os.Remove(last.Path)
	unseen := filepath.Join(filepath.Dir(files[2].Path), "unseen.cuh")
	os.WriteFile(unseen, []byte("u"), 0o644)
	more := append(append([]File(nil), files...), fileOf(unseen, "u"))
	// (Its directory changed too: its absent places may be the one named.)
	if why, fresh := fc.checkSince(more, start); why != "" || fresh != unseen && fresh != filepath.Dir(unseen) {
		t.Errorf("a file first seen after the compile began: %q fresh %q, want it or its directory fresh", why, fresh)
	}
}

// BenchmarkCheckSince times the server's check of a CCCL-sized key (800
// files, 800 absent places), warm, in parallel chunks (eachFile) and one
// file after another, side by side.
func BenchmarkCheckSince(b *testing.B) {
	files := manyFiles(b, 800)
	fc := newFileChecker()
	fc.settle = time.Millisecond
	fc.check(files)
	time.Sleep(5 * time.Millisecond)
	start := time.Now()
	b.Run("parallel", func(b *testing.B) {
		for b.Loop() {
			if why, fresh := fc.checkSince(files, start); why != "" || fresh != "" {
				b.Fatal(why, fresh)
			}
		}
	})
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			for _, f := range files {
				if fc.checkOne(f) != "" {
					b.Fatal(f.Path)
				}
				if f.Kind == FileAbsent {
					dir := nearestDir(f.Path)
					fc.stableSince(dirKey(dir), dir, start)
				} else {
					fc.stableSince(f.Path, f.Path, start)
				}
			}
		}
	})
}
