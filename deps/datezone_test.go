package deps_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
)

// TestDateAsClang: clang writes __DATE__ in the zone the C library's
// localtime uses, which TZ names as glibc reads it, POSIX rules included
// (TZ=UTC-14 is fourteen hours ahead; Go reads it as UTC). The key's day
// must be clang's, or the source uncacheable.
func TestDateAsClang(t *testing.T) {
	clang := requireClang(t)
	dir := t.TempDir()
	src := []byte("const char *d = __DATE__;\n")
	main := filepath.Join(dir, "d.c")
	if err := os.WriteFile(main, src, 0o644); err != nil {
		t.Fatal(err)
	}
	dateRE := regexp.MustCompile(`"([A-Z][a-z]{2} [ 0-9]\d \d{4})"`)
	for _, tz := range []string{"<unset>", "", "UTC", "UTC-14", "<+14>-14", "UTC+12", "Pacific/Kiritimati", ":Etc/GMT+12", "Etc/GMT-14"} {
		if tz == "<unset>" {
			t.Setenv("TZ", "")
			os.Unsetenv("TZ")
		} else {
			t.Setenv("TZ", tz)
		}
		key := func() (kcache.Header, error) {
			h, _, err := deps.NewScanner(nil).Scan(context.Background(), deps.Input{Source: src, WorkDir: dir})
			if err != nil {
				return kcache.Header{}, err
			}
			i := slices.IndexFunc(h, func(h kcache.Header) bool { return h.Name == deps.DateHeader })
			if i < 0 {
				t.Fatalf("TZ=%q: no %s in the key %v", tz, deps.DateHeader, h)
			}
			return h[i], nil
		}
		before, err := key()
		if errors.Is(err, deps.ErrUncacheable) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(clang, "-E", main).Output() // TZ as set above
		if err != nil {
			t.Fatal(err)
		}
		after, _ := key()
		m := dateRE.FindSubmatch(out)
		if m == nil {
			t.Fatalf("no date in clang's output: %s", out)
		}
		// A day that turned while clang ran proves nothing either way.
		if before == after && before.Digest != sha256.Sum256(m[1]) {
			t.Errorf("TZ=%q: clang writes %s; the key holds another day", tz, m[1])
		}
	}
}
