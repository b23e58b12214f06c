package cuda

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/kcache/kcache"
)

// maxIncludeDepth bounds include resolution, so a header that includes
// itself without a guard cannot loop forever; real code nests a few levels.
const maxIncludeDepth = 64

// headerResolver finds every file a source includes, the way the compiler
// will: a quoted include relative to the including file's directory first,
// then the -I directories in order; an angled include in the -I directories
// only. Includes it cannot find are left to the compiler (its own built-in
// headers are covered by the compiler's identity in the key).
//
// Conditional includes are resolved regardless of their #if: a superset of
// the real dependencies costs at most a spurious rebuild, never a stale one.
type headerResolver struct {
	dirs  []string
	stats *statCache
	seen  map[string]bool // absolute paths already resolved
	out   []kcache.Header
}

// resolveHeaders returns the headers src includes, directly or not. dir is
// the directory of the source file ("" for a source that is not a file).
func resolveHeaders(stats *statCache, src []byte, dir string, includeDirs []string) ([]kcache.Header, error) {
	r := &headerResolver{dirs: includeDirs, stats: stats, seen: map[string]bool{}}
	if err := r.scan(src, dir, 0); err != nil {
		return nil, err
	}
	return r.out, nil
}

func (r *headerResolver) scan(src []byte, dir string, depth int) error {
	if depth > maxIncludeDepth {
		return fmt.Errorf("cuda: includes nested deeper than %d", maxIncludeDepth)
	}
	for _, inc := range includes(src) {
		path, fi := r.find(inc, dir)
		if path == "" || r.seen[path] {
			continue
		}
		r.seen[path] = true
		digest, content, _, err := r.stats.digest(path, fi)
		if err != nil {
			return fmt.Errorf("cuda: header %s: %w", path, err)
		}
		// The name as written, not the path found, keeps keys equal across
		// checkouts in different places; the digest pins the content.
		r.out = append(r.out, kcache.Header{Name: inc.name, Digest: digest})
		if err := r.scan(content, filepath.Dir(path), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// find resolves one include directive to an absolute path and that file's
// stat, or "".
func (r *headerResolver) find(inc include, dir string) (string, os.FileInfo) {
	var candidates []string
	if inc.quoted && dir != "" {
		candidates = append(candidates, filepath.Join(dir, inc.name))
	}
	for _, d := range r.dirs {
		candidates = append(candidates, filepath.Join(d, inc.name))
	}
	for _, c := range candidates {
		fi, err := os.Stat(c)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if abs, err := filepath.Abs(c); err == nil {
			return abs, fi
		}
	}
	return "", nil
}

// include is one #include directive.
type include struct {
	name   string
	quoted bool // "name" rather than <name>
}

// includes returns the #include directives of src, in order. It reads
// lines, not tokens: an include inside a block comment is still counted,
// which at worst adds a dependency.
func includes(src []byte) []include {
	var out []include
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 64*1024), len(src)+1)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		rest, ok := bytes.CutPrefix(line, []byte("#"))
		if !ok {
			continue
		}
		rest, ok = bytes.CutPrefix(bytes.TrimSpace(rest), []byte("include"))
		if !ok {
			continue
		}
		rest = bytes.TrimSpace(rest)
		if len(rest) < 2 {
			continue
		}
		closing := map[byte]byte{'"': '"', '<': '>'}[rest[0]]
		if closing == 0 {
			continue // #include MACRO: only the compiler can expand it
		}
		if end := bytes.IndexByte(rest[1:], closing); end > 0 {
			out = append(out, include{name: string(rest[1 : 1+end]), quoted: rest[0] == '"'})
		}
	}
	return out
}

// statCache remembers each header's digest and content under its file
// identity (size, mtime, inode), so a warm lookup stats headers instead of
// reading and hashing them: the technique of ccache's direct mode.
type statCache struct {
	mu      sync.Mutex
	entries map[string]statEntry // by absolute path; guarded by mu
}

type statEntry struct {
	size    int64
	mtime   time.Time
	inode   uint64
	digest  kcache.Digest
	content []byte
}

func newStatCache() *statCache { return &statCache{entries: map[string]statEntry{}} }

// digest returns the content digest and content of path, whose stat is
// fi. read reports whether the file was read: only when it changed or was
// not seen before; otherwise both come from memory.
func (s *statCache) digest(path string, fi os.FileInfo) (d kcache.Digest, content []byte, read bool, err error) {
	id := statEntry{size: fi.Size(), mtime: fi.ModTime(), inode: inodeOf(fi)}
	s.mu.Lock()
	e, ok := s.entries[path]
	s.mu.Unlock()
	// A file modified within the last two seconds may change again within
	// the same mtime tick; re-read it, as ccache does for "too new" files.
	if ok && e.size == id.size && e.mtime.Equal(id.mtime) && e.inode == id.inode &&
		time.Since(id.mtime) > 2*time.Second {
		return e.digest, e.content, false, nil
	}
	content, err = os.ReadFile(path)
	if err != nil {
		return kcache.Digest{}, nil, false, err
	}
	id.digest = sha256.Sum256(content)
	id.content = content
	s.mu.Lock()
	s.entries[path] = id
	s.mu.Unlock()
	return id.digest, content, true, nil
}

func inodeOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
