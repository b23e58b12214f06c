package compileserver

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// begin starts an early compile of code, with its files to follow.
func begin(t *testing.T, cl *Client, code string) *Pending {
	t.Helper()
	p, err := cl.Begin(context.Background(), request(code))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func finish(t *testing.T, p *Pending, files ...File) *Reply {
	t.Helper()
	r, err := p.Finish(context.Background(), [32]byte{1}, files)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// settled writes a header, has the server check it (as an earlier
// request would) and waits until its change time is behind the server's
// (narrowed) settle margin.
func settled(t *testing.T, srv *Server, path, content string) File {
	t.Helper()
	f := header(t, path, content)
	srv.files.settle = time.Millisecond
	if why := srv.files.check([]File{f}); why != "" {
		t.Fatal(why)
	}
	time.Sleep(5 * time.Millisecond)
	return f
}

// TestEarlyCompile: a compile begun before the key, with files settled
// before it began, is answered from that compile once the files come.
func TestEarlyCompile(t *testing.T) {
	srv, cl, _ := startInProcess(t, Options{})
	dir := shortTemp(t)
	h := settled(t, srv, filepath.Join(dir, "h.cuh"), "v1")
	absent := File{Path: filepath.Join(dir, "absent.h"), Kind: FileAbsent}
	srv.files.check([]File{absent})
	time.Sleep(5 * time.Millisecond)
	p := begin(t, cl, "k")
	r := finish(t, p, h, absent)
	if r.Status != StatusOK || !strings.Contains(string(r.Code), "code=k ") || !strings.Contains(string(r.Code), "pch=true") {
		t.Fatalf("reply %v %q %q", r.Status, r.Message, r.Code)
	}
	if st := srv.Stats(); st.Early != 1 || st.EarlyRedone != 0 || st.Compiled != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestEarlyHeaderEdited: a header edited after the early compile began is
// never answered from that compile: stale where the key saw the old
// content, compiled again from the new where the key saw the new.
func TestEarlyHeaderEdited(t *testing.T) {
	srv, cl, _ := startInProcess(t, Options{})
	dir := shortTemp(t)
	path := filepath.Join(dir, "h.cuh")
	old := settled(t, srv, path, "v1")
	p := begin(t, cl, "a")
	time.Sleep(50 * time.Millisecond) // lets the early compile read v1 (the result holds either way)
	edited := header(t, path, "v2")
	if r := finish(t, p, old); r.Status != StatusStale {
		t.Errorf("the key of the old header: %v %q, want stale", r.Status, r.Code)
	}
	p = begin(t, cl, "b")
	time.Sleep(50 * time.Millisecond)
	header(t, path, "v3")
	edited = header(t, path, "v2") // the key's content again, changed after the compile began
	r := finish(t, p, edited)
	if r.Status != StatusOK || !strings.Contains(string(r.Code), "h.cuh=v2") {
		t.Fatalf("the key of the new header: %v %q, want a compile from v2", r.Status, r.Code)
	}
	if st := srv.Stats(); st.EarlyRedone != 1 || st.Early != 0 {
		t.Errorf("stats %+v: want one compiled again", st)
	}
}

// TestEarlyAbsentPlaceTouched: an absent place whose directory changed
// after the compile began (a header made and removed there) is compiled
// again.
func TestEarlyAbsentPlaceTouched(t *testing.T) {
	srv, cl, _ := startInProcess(t, Options{})
	dir := shortTemp(t)
	h := settled(t, srv, filepath.Join(dir, "h.cuh"), "v1")
	absent := File{Path: filepath.Join(dir, "sub", "gone.h"), Kind: FileAbsent}
	srv.files.check([]File{absent})
	time.Sleep(5 * time.Millisecond)
	p := begin(t, cl, "k")
	time.Sleep(20 * time.Millisecond)
	header(t, filepath.Join(dir, "gone.h"), "x") // sub does not exist: dir is the nearest directory
	os.Remove(filepath.Join(dir, "gone.h"))
	if r := finish(t, p, h, absent); r.Status != StatusOK {
		t.Fatalf("reply %v %q", r.Status, r.Message)
	}
	if st := srv.Stats(); st.EarlyRedone != 1 {
		t.Errorf("stats %+v: want it compiled again", st)
	}
}

// TestEarlyAbandoned: a client that needs no compile (its key hit) hangs
// up; the server counts it and goes on.
func TestEarlyAbandoned(t *testing.T) {
	srv, cl, _ := startInProcess(t, Options{})
	begin(t, cl, "SLEEP").Abandon()
	deadline := time.Now().Add(20 * time.Second)
	for srv.Stats().EarlyAbandoned != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v: want one abandoned", srv.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if r := compile(t, cl, request("k")); r.Status != StatusOK {
		t.Errorf("after: %v", r.Status)
	}
}

// TestEarlyThroughPool: the same through worker processes.
func TestEarlyThroughPool(t *testing.T) {
	srv, _, cl := startPool(t, 2)
	dir := shortTemp(t)
	h := settled(t, srv, filepath.Join(dir, "h.cuh"), "v1")
	r := finish(t, begin(t, cl, "k"), h)
	if r.Status != StatusOK || !strings.HasPrefix(string(r.Code), "code=k ") || r.PCH != PCHCreated {
		t.Fatalf("reply %v %q %v", r.Status, r.Code, r.PCH)
	}
	if st := srv.Stats(); st.Early != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestWarmUpOutlivesClient: a warm-up compile runs to its end after its
// client hung up (it compiles itself and wants only the PCH made); an
// ordinary compile is abandoned.
func TestWarmUpOutlivesClient(t *testing.T) {
	srv, cl, _ := startInProcess(t, Options{})
	for _, warm := range []bool{false, true} {
		r := request("SLEEP")
		r.WarmUp = warm
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		if _, err := cl.Compile(ctx, r); err == nil {
			t.Fatalf("warm-up %v: answered before the client left", warm)
		}
		cancel()
	}
	deadline := time.Now().Add(20 * time.Second)
	for st := srv.Stats(); st.Compiled != 1 || st.Failed != 1; st = srv.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v: want the warm-up compiled and the other abandoned", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestEarlyUnseenOrReplaced: a file the server had not seen before the
// compile began, or that is another file now (a link switched to a tree
// of older files, as a toolkit switch does), is compiled again, though
// its change time is old and its content the key's.
func TestEarlyUnseenOrReplaced(t *testing.T) {
	srv, cl, _ := startInProcess(t, Options{})
	srv.files.settle = time.Millisecond
	dir := shortTemp(t)
	unseen := header(t, filepath.Join(dir, "unseen.h"), "u")
	time.Sleep(5 * time.Millisecond)
	if r := finish(t, begin(t, cl, "a"), unseen); r.Status != StatusOK {
		t.Fatalf("unseen: %v %q", r.Status, r.Message)
	}
	if st := srv.Stats(); st.EarlyRedone != 1 || st.Early != 0 {
		t.Fatalf("a file first seen after the compile began: stats %+v, want it compiled again", st)
	}
	for _, v := range []string{"one", "two"} {
		os.Mkdir(filepath.Join(dir, v), 0o755)
		header(t, filepath.Join(dir, v, "h.cuh"), "content of "+v)
	}
	link := filepath.Join(dir, "cur")
	os.Symlink("one", link)
	h := settled(t, srv, filepath.Join(link, "h.cuh"), "content of one")
	p := begin(t, cl, "b")
	time.Sleep(20 * time.Millisecond)
	os.Remove(link)
	os.Symlink("two", link)
	now := File{Path: h.Path, Digest: sha256.Sum256([]byte("content of two"))}
	r := finish(t, p, now)
	if r.Status != StatusOK || !strings.Contains(string(r.Code), "h.cuh=content of two") {
		t.Fatalf("after the switch: %v %q, want a compile from the new tree", r.Status, r.Code)
	}
	if st := srv.Stats(); st.EarlyRedone != 2 {
		t.Errorf("stats %+v: want the switched file compiled again", st)
	}
}
