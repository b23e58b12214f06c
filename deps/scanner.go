// Package deps finds the files a compiler reads while it preprocesses a
// translation unit, so that every one of them can enter a cache key. It
// knows no driver: callers say how theirs searches (Input).
//
// It follows the compiler's own rules: translation phases 1 and 2 as clang
// applies them, includes searched in the compiler's order and keyed by
// where they were found, computed includes (#include MACRO) expanded with
// the -D/-U options and the #defines seen before them, and conditionals
// all taken as live, which finds a superset of the real dependencies. A
// superset costs at worst a spurious rebuild; a missing dependency would
// serve a stale binary, which deps never allows. It narrows the key only
// where it is sure: whatever it does not model exactly makes the source
// uncacheable (ErrUncacheable), never keyed as absent.
//
// A Scanner remembers every file's digest and parsed directives under the
// file's identity (size, mtime, ctime, inode), so a warm scan stats files
// and reads none, as ccache's direct mode does; a file read within a
// timestamp tick of its last change is never trusted by stat alone.
// With a RecordStore (WithRecords), a scan is also kept across processes
// as a dependency record (record.go): a new process stats what the record
// lists and, when every stat answers as it did, reads no header at all.
//
// It must know no driver, no device and no tier: callers describe their
// compiler's search (Input), and records are kept in whatever RecordStore
// they pass (a kcache.Cache is one). Within the module it imports only the
// root package, for the key's types.
package deps

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kcache/kcache"
)

// Rules name how a dependency was found; they appear in Dependency.Rule and
// in traces.
const (
	// RuleInclude is a file named by a literal #include (or #import,
	// #include_next).
	RuleInclude = "include"
	// RuleComputedInclude is a file named by an #include whose operand
	// is a macro expansion.
	RuleComputedInclude = "computed-include"
	// RuleForcedInclude is a file named by a -include option.
	RuleForcedInclude = "forced-include"
	// RuleHasInclude is a file whose existence a __has_include tests.
	RuleHasInclude = "has-include"
	// RuleEmbed is a file named by #embed: read, not preprocessed.
	RuleEmbed = "embed"
	// RuleDeclared is a dependency the caller declared (Input.Depends).
	RuleDeclared = "declared"
	// RuleManifest is a file of a search directory, keyed because the
	// exact dependencies could not be known.
	RuleManifest = "search-dir manifest"
	// RuleClock is the day, for a source that expands __DATE__: its
	// Path holds the day as the compiler writes it.
	RuleClock = "clock"
	// RuleAbsent is a place the compiler looks before the file it finds
	// (or instead of a file it never finds): creating a file there would
	// change what it compiles. Absent places have no digest; a scan stats
	// them every time.
	RuleAbsent = "absent"
	// RuleNotPredefined is a name the key assumes the compiler does not
	// predefine (see Input.VerifiesPredefines): its Path holds the name,
	// and a caller must check it with the compiler before it stores a
	// build.
	RuleNotPredefined = "not-predefined"
	// RuleOptionDecides is a name an option defines or undefines that the
	// compiler may predefine too (see Input.VerifiesPredefines): the key
	// takes the option's definition, which holds only where the compiler
	// defines its own first. Its Path holds the name, and a caller must
	// check with the compiler, given the build's options, that a later
	// option's definition of it wins before it stores a build.
	RuleOptionDecides = "option-decides"
	// RuleWorkDir is the working directory, for a compiler whose options
	// may write it into the binary (debug information: -g): its Path
	// holds the directory. The key names headers relative to it, which
	// leaves it out everywhere else.
	RuleWorkDir = "working-directory"
)

// ErrUncacheable reports that the dependencies of a source cannot be
// bounded: the exact set is unknown and the directories the compiler could
// search are too large or cannot be read. A caller must then build without
// storing the result, since no key can be trusted to change with the
// files the compiler reads.
var ErrUncacheable = errors.New("deps: dependencies cannot be bounded")

// Input is one translation unit and the compiler invocation that will
// preprocess it.
type Input struct {
	// BaseDir, when set, names the dependencies found under it that the
	// key would name by absolute path relative to it instead
	// (BaseDirPrefix), unless a file read expands __FILE__ or the like.
	// A caller sets it only where RelocateArgs said relocation is exact
	// for Args, and keys the options RelocateArgs returned; Args stay as
	// the compiler gets them.
	BaseDir string
	// Source is the translation unit's text.
	Source []byte
	// Path is the file Source was read from, or "" for source held in
	// memory. It names the source in messages, and unless SearchWorkDir
	// is set, quoted includes of the main source are searched in its
	// directory first, as a compiler given the file does.
	Path string
	// WorkDir is the compiler's working directory, against which
	// relative search directories and names are resolved; "" means
	// os.Getwd().
	WorkDir string
	// Args are the compiler options, already split as the driver splits
	// them (see SplitDriverOptions):
	// -I DIR, -IDIR, -iquote, -isystem, -idirafter, -D NAME[=VALUE],
	// -U NAME, -include FILE, -imacros FILE, and NVRTC's --include-path,
	// --define-macro, --undefine-macro, --pre-include; -isysroot and
	// --sysroot only for where they put -I=DIR. Other options are
	// ignored here.
	Args []string
	// Depends are files the caller declares as dependencies, which no
	// scanner can see (a file the program reads at build time, a header
	// handed to the compiler through an API).
	Depends []string
	// MainDir, when set, is the directory the compiler searches first
	// for a quoted include of the main source, in place of Path's: PoCL
	// compiles program text from a temporary file in its cache
	// directory, so a header there shadows every other.
	MainDir string
	// PrivateDir, when set, is a directory of this process's own, the
	// one MainDir names: kcache's commands give PoCL a new scratch
	// directory in every process. A dependency record names it by a
	// placeholder, so that one process's record serves the next, whose
	// own PrivateDir takes its place when the record is checked: each
	// place the scan probed there is probed in the new directory, and a
	// file that appears there is seen. A scan that found anything there,
	// looked there other than for the main source's quoted includes, or
	// whose other fields name the directory stores no record.
	PrivateDir string
	// Trigraphs says whether the compiler replaces trigraphs; the zero
	// value, TrigraphsUnknown, makes a source uncacheable where the
	// answer would change its directives.
	Trigraphs Trigraphs
	// LexesC says the compiler lexes the source as C (OpenCL C on PoCL):
	// without it, the scan allows for C++'s raw string literals
	// (R"x(...)x", in which "/*" and line ends begin nothing) and digit
	// separators (1'000, which begin no character literal), and a file
	// whose directives differ with and without them is uncacheable, as
	// for trigraphs. CUDA is C++, and so is C++ for OpenCL.
	LexesC bool
	// LexesCPlusPlus says the compiler lexes the source and every header
	// as C++14 or later (NVRTC at its default dialect, C++17): raw string
	// literals and digit separators are lexed as such, and a file whose
	// directives would differ without them is read as the compiler reads
	// it, not refused. It and LexesC are not both set.
	LexesCPlusPlus bool
	// SearchWorkDir says the compiler searches the working directory
	// first for every include, quoted or angled, from any file, as if
	// "-I." came first. PoCL does: it compiles program text under a
	// relative name.
	SearchWorkDir bool
	// SystemDirs are directories the compiler searches on its own after
	// those of the options (a compiler's built-in include directory).
	// Headers found there are followed and keyed like any other. They are
	// system directories: an -I directory that is one of them is searched
	// at their place, as clang searches it.
	SystemDirs []string
	// CompleteSearchPath says the compiler searches no directory but
	// those Input names (PoCL searches none of its own). An include found
	// nowhere then fails the build wherever it is live; without this
	// promise it may come from a directory the scan cannot see, and
	// define macros the scan cannot know, so any identifier of a later
	// computed include becomes unknowable.
	CompleteSearchPath bool
	// CompilerHeaders are the header names the compiler resolves on its
	// own, before and instead of any directory: NVRTC 13's
	// __nv_nvrtc_builtin_header.h, or headers handed to it in memory.
	// An include of one is no file of the key (the compiler's identity,
	// or the caller, stands for its text), and it may define macros the
	// scan cannot see, so computed includes after it trust no name
	// nobody defined, as after an include found nowhere without
	// CompleteSearchPath.
	CompilerHeaders []string
	// CompilerMacros are names beyond the reserved ones (__X, _X) that the
	// compiler may define on its own, in its built-in headers (NVRTC 13
	// defines CUDART_VERSION, NV_IF_TARGET, assert, ...); an entry ending
	// in "*" names every name it prefixes. A computed include that expands
	// one that no scanned file defines cannot be known, as one that
	// expands an undefined reserved name cannot.
	CompilerMacros []string
	// EveryCandidate keys every file an include could name along the
	// search path, not only the first one found: for a compiler whose
	// search order is not known exactly (an OpenCL driver other than
	// PoCL may or may not search the working directory).
	EveryCandidate bool
	// Builtins are headers the compiler reads before the source without
	// being asked (an OpenCL compiler's opencl-c.h, PoCL's _kernel.h).
	// Their macros may name the parts of a computed include (PoCL
	// defines log, abs, ...), so each is learnt as a candidate beside
	// "undefined". They are not dependencies: the compiler's identity
	// in the key stands for them. Missing files are ignored.
	Builtins []string
	// PredefinesAfterOptions says the compiler defines its own macros
	// after the options (PoCL 3.1 appends its device's -D list:
	// __ENDIAN_LITTLE__, __OPENCL_VERSION__, cl_khr_fp64, ...), so that a
	// -D or -U of the options for a name it may predefine (see
	// CompilerMacros) does not decide that name: the later definition
	// wins. Such a name keeps the compiler's value, which a computed
	// include cannot know.
	PredefinesAfterOptions bool
	// VerifiesPredefines says the caller checks, before it stores a
	// build, that the compiler predefines none of the names the trace
	// lists under RuleNotPredefined, and that an option's definition wins
	// over the compiler's for each name listed under RuleOptionDecides
	// (the cuda package asks NVRTC, with the build's options). A name the scanned files define only inside
	// conditionals keeps, wherever none of those definitions is certain
	// to have been made, the value the compiler gave it; for a name the
	// compiler may predefine (a reserved one, one of CompilerMacros'
	// prefixes) that value is not known, and a computed include that
	// expands it is unknowable unless the caller verifies the
	// assumption that there is none. Thrust names its systems so.
	VerifiesPredefines bool
}

// Dependency is one file that went into a key, or one place that was
// checked and found empty, with the rule that found it.
type Dependency struct {
	// Path is the absolute path of the file or of the empty place.
	Path string
	// Name is the name the key holds: where the file was found, as the
	// compiler opens it, relative to the working directory when under it
	// (so keys stay equal across checkouts in different places) and
	// absolute otherwise; the digest pins the content.
	Name string
	// Digest is the SHA-256 of the file's content; zero for RuleAbsent.
	Digest kcache.Digest
	// Rule says how the dependency was found (RuleInclude, ...).
	Rule string
}

// LogValue makes a Dependency print as a group in slog output.
func (d Dependency) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("rule", d.Rule), slog.String("name", d.Name), slog.String("path", d.Path)}
	if d.Rule != RuleAbsent {
		attrs = append(attrs, slog.String("digest", d.Digest.String()))
	}
	return slog.GroupValue(attrs...)
}

// Scanner finds dependencies. It holds the per-file cache that makes warm
// scans cost a stat per file. A Scanner is safe for concurrent use.
type Scanner struct {
	log   *slog.Logger
	fs    *fileSystem
	files *fileCache
	dirs  *dirCache
	memos *memoCache
	// records keeps scans across processes; nil for none.
	records RecordStore
	writing atomic.Int64   // record writes under way
	writes  sync.WaitGroup // the same, for WaitRecords
	// recordWait is how long storeRecord waits for a write (WithRecordWait).
	recordWait time.Duration
	// earlyInline is the most places a record may list for an early key
	// to check them before it returns (early.go).
	earlyInline int
	// builtins is the macro table of the last Input.Builtins seen, and
	// builtinText their text (scan.builtinsMention).
	builtins    builtinValue[*macroTable]
	builtinText builtinValue[*builtinTexts]

	reportMu sync.Mutex          // guards reported
	reported map[string]struct{} // reasons already logged, by source and reason
}

// NewScanner returns a Scanner that logs why a source is uncacheable, or
// an include was found nowhere, at debug level through logger (nil:
// slog.Default()).
func NewScanner(logger *slog.Logger, opts ...Option) *Scanner {
	if logger == nil {
		logger = slog.Default()
	}
	s := &Scanner{log: logger, fs: osFileSystem(), files: newFileCache(), dirs: newDirCache(), memos: newMemoCache(), reported: map[string]struct{}{}, recordWait: recordWriteWait, earlyInline: earlyInlinePlaces}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Scan returns the headers that belong in the key of in (names and
// digests, for kcache.Image.Headers) and the trace of every dependency
// with its rule, absent places included. It returns an error wrapping
// ErrUncacheable when no key can be trusted (see ErrUncacheable), and an
// error when a dependency exists but cannot be read.
func (s *Scanner) Scan(ctx context.Context, in Input) (headers []kcache.Header, trace []Dependency, err error) {
	m, err := s.scanMemo(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	return m.result(s.fs.now())
}

// AppendHeaders is Scan for a caller that needs only the headers: it
// appends them to dst, and copies no trace. A warm key of a source with
// hundreds of headers copied its trace on every lookup.
func (s *Scanner) AppendHeaders(ctx context.Context, dst []kcache.Header, in Input) ([]kcache.Header, error) {
	m, err := s.scanMemo(ctx, in)
	if err != nil {
		return dst, err
	}
	return m.appendHeaders(dst, s.fs.now())
}

// scanMemo returns the memo of a scan of in that holds now: this
// process's, the record's, or a new scan's.
func (s *Scanner) scanMemo(ctx context.Context, in Input) (*memo, error) {
	m, _, err := s.memoOf(ctx, in, false)
	return m, err
}

// memoOf is scanMemo, except that with early a dependency record's memo
// is returned before its stats are done, with the Confirm that waits for
// them; any other memo holds on return, and its Confirm is confirmed.
func (s *Scanner) memoOf(ctx context.Context, in Input, early bool) (*memo, Confirm, error) {
	wd, err := inputWorkDir(in, "")
	if err != nil {
		return nil, nil, err
	}
	m, h := s.memos.lookup(in, wd)
	if m != nil {
		if m.valid(s.fs) {
			return m, confirmed, nil
		}
		s.logStaleMemo(ctx, in, m)
	}
	// Past the memo the input's SHA-256 names its record, and a scan
	// costs far more than the hash.
	key := inputID(in, wd)
	if m == nil {
		// A memo of this process is newer than any record, which was
		// loaded or written with it.
		if r := s.loadRecord(ctx, key, in, wd); r.m != nil {
			if early && len(r.m.seen) > s.earlyInline {
				return r.m, s.confirmLater(ctx, r, in, wd, h), nil
			}
			if r.holds(ctx, s, in) {
				s.memos.put(h, key, in, wd, r.m)
				return r.m, confirmed, nil
			}
		}
	}
	if f, ok := ctx.Value(scanStartKey{}).(func()); ok {
		f()
	}
	sc := newScan(ctx, s, in, wd)
	if err := sc.run(); err != nil {
		return nil, nil, err
	}
	var headers []kcache.Header
	for _, d := range sc.trace {
		if d.Rule != RuleAbsent {
			headers = append(headers, kcache.Header{Name: d.Name, Digest: d.Digest})
		}
	}
	sortHeaders(headers)
	m = &memo{seen: sc.seen, headers: headers, trace: sc.trace, date: sc.date}
	s.memos.put(h, key, in, wd, m)
	switch {
	case in.PrivateDir == "":
		s.storeRecord(ctx, key, m)
	case !sc.unportable && m.portable(sc.private):
		s.storeRecord(ctx, key, m.portableCopy(sc.private))
	}
	return m, confirmed, nil
}

// Unchanged reports whether every file and directory the last Scan of in
// looked at is as it was then, and was settled then (not changed within
// a timestamp tick of the scan). A caller checks it after building from
// the scan's key: when false, a file may have changed while the compiler
// read it, and the binary must be used but not stored under that key. It
// does not say that the last Scan was the caller's: one that built from a
// key asks Holds.
func (s *Scanner) Unchanged(in Input) bool {
	return s.heldMemo(in) != nil
}

// heldMemo returns the memo of the last Scan of in where it holds now
// (Unchanged), else nil.
func (s *Scanner) heldMemo(in Input) *memo {
	wd, err := inputWorkDir(in, "")
	if err != nil {
		return nil
	}
	if m, _ := s.memos.lookup(in, wd); m != nil && m.valid(s.fs) {
		return m
	}
	return nil
}

// Holds reports whether the files a key was computed from are as the
// scans of its inputs saw them, and were settled then: the last Scan of
// each of ins holds (Unchanged), and the headers those scans give, after
// extra (the key's headers no scan found: those in memory), are headers,
// the key's, as a set. A caller checks it after building from the key:
// only then may the binary be stored under it. Unchanged alone says
// nothing of which scan was last: another request of the same source may
// have scanned it since, after a header was edited, and that scan holds.
func (s *Scanner) Holds(ins []Input, extra, headers []kcache.Header) bool {
	got := slices.Clone(extra)
	now := s.fs.now()
	for _, in := range ins {
		m := s.heldMemo(in)
		if m == nil {
			return false
		}
		var err error
		if got, err = m.appendHeaders(got, now); err != nil {
			return false
		}
	}
	return sameHeaders(got, headers)
}

// sameHeaders reports whether a and b hold the same headers, in any
// order: a key sorts its headers.
func sameHeaders(a, b []kcache.Header) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	sortHeaders(a)
	sortHeaders(b)
	return slices.Equal(a, b)
}

// DayUnchanged reports whether headers, those of a key made from a scan,
// hold today's day where they hold one (DateHeader). clang writes the day
// of __DATE__ when it preprocesses: a build whose key was made before the
// day turned may hold the next day, and must not be stored under the
// key's.
func (s *Scanner) DayUnchanged(headers []kcache.Header) bool {
	i := slices.IndexFunc(headers, func(h kcache.Header) bool { return h.Name == DateHeader })
	if i < 0 {
		return true
	}
	h, _, err := dateHeader(s.fs.now())
	return err == nil && h == headers[i]
}

// inputWorkDir returns the working directory in is scanned in:
// in.WorkDir, or else the process's, which is known where wd is not "".
func inputWorkDir(in Input, wd string) (string, error) {
	switch {
	case in.WorkDir != "":
		return in.WorkDir, nil
	case wd != "":
		return wd, nil
	}
	wd, err := workDir()
	if err != nil {
		return "", fmt.Errorf("deps: working directory: %w", err)
	}
	return wd, nil
}

// workDir returns what os.Getwd returns, for one getcwd system call where
// it can: os.Getwd stats "." and $PWD to return $PWD when it names the
// working directory, and asks getcwd otherwise. When getcwd's answer is
// $PWD itself, or $PWD is unset or relative, os.Getwd would return that
// answer too; only a $PWD that names the directory by another path (a
// symbolic link) is left to os.Getwd. A warm key paid two stats here on
// every lookup.
func workDir() (string, error) {
	if syscall.ImplementsGetwd {
		if dir, err := getwd(); err == nil {
			if pwd := os.Getenv("PWD"); pwd == dir || pwd == "" || pwd[0] != '/' {
				return dir, nil
			}
		}
	}
	return os.Getwd()
}

// getwd is syscall.Getwd with a buffer of shortWorkDir bytes, where the
// working directory's name fits: syscall.Getwd zeroes a buffer of PATH_MAX
// (4 KiB) on the stack, on every key, and a new process's first key paid
// 8 us for the working directory on the H100 (bench/RESULTS-cuda.md,
// hit7). A longer name is left to syscall.Getwd.
func getwd() (string, error) {
	var buf [shortWorkDir]byte
	n, err := syscall.Getcwd(buf[:])
	if err == syscall.ERANGE {
		return syscall.Getwd()
	}
	if err != nil {
		return "", err
	}
	// As syscall.Getwd: n counts the NUL, and a name that is not absolute
	// ("(unreachable)/...") is no working directory.
	if n < 1 || n > len(buf) || buf[n-1] != 0 {
		return "", syscall.EINVAL
	}
	if buf[0] != '/' {
		return "", syscall.ENOENT
	}
	return string(buf[:n-1]), nil
}

// shortWorkDir is the buffer getwd asks the working directory's name into.
const shortWorkDir = 256

// loadedRecord is a dependency record read and decoded, not yet checked.
type loadedRecord struct {
	m            *memo        // nil when there is none, or it did not decode
	check        *recordCheck // the stats of m's places, begun as it was decoded; nil for none yet
	id           kcache.Digest
	bytes        int
	read, decode time.Duration
}

// loadRecord reads and decodes the dependency record of in, whose id is
// id (wd standing for its working directory), with its places under
// privateRoot in in.PrivateDir. Whether it still holds is for holds to
// say.
func (s *Scanner) loadRecord(ctx context.Context, id kcache.Digest, in Input, wd string) loadedRecord {
	r := loadedRecord{id: id}
	if s.records == nil {
		return r
	}
	start := time.Now()
	data, err := s.records.LoadRecord(ctx, id)
	if err != nil {
		if errors.Is(err, kcache.ErrMiss) {
			s.log.Debug("deps: no dependency record, scanning", "source", in.Path, "id", id)
		} else {
			s.log.Debug("deps: dependency record unreadable, scanning", "source", in.Path, "id", id, "err", err)
		}
		return r
	}
	read := time.Now()
	var m *memo
	if in.PrivateDir == "" {
		// The stats begin while the record is decoded (recordCheck).
		r.check = newRecordCheck(s.fs)
		m, err = decodeRecordChecked(id, data, r.check)
	} else {
		// Its places are known once re-rooted, after the decode.
		if m, err = decodeRecord(id, data); err == nil {
			err = rerootRecord(m, in, wd)
		}
	}
	if err != nil {
		s.log.Debug("deps: dependency record ignored, scanning", "id", id, "err", err)
		return r
	}
	r.m, r.bytes, r.read, r.decode = m, len(data), read.Sub(start), time.Since(read)
	return r
}

// logStaleMemo logs, at debug level, which place made this process's
// memo of in stop holding.
func (s *Scanner) logStaleMemo(ctx context.Context, in Input, m *memo) {
	if s.log.Enabled(ctx, slog.LevelDebug) {
		s.log.Debug("deps: scan of this process stale, scanning", "source", in.Path,
			slog.Any("stale", slog.GroupValue(staleness(s.fs, m.seen)...)))
	}
}

// holds reports whether every stat of the record answers as it did. At
// debug level it logs the answer and what the record cost: a new
// process's first key is this, and a record that stops holding makes
// every new process scan.
func (r loadedRecord) holds(ctx context.Context, s *Scanner, in Input) bool {
	start := time.Now()
	var ok bool
	if r.check != nil {
		ok = r.check.wait()
	} else {
		ok = r.m.valid(s.fs)
	}
	if s.log.Enabled(ctx, slog.LevelDebug) {
		msg := "deps: dependency record holds"
		attrs := []any{"source", in.Path, "id", r.id, "bytes", r.bytes, "observations", len(r.m.seen),
			"dependencies", r.m.dependencyCount(), "read", r.read, "decode", r.decode, "stat", time.Since(start)}
		if !ok {
			msg = "deps: dependency record stale, scanning"
			attrs = append(attrs, slog.Any("stale", slog.GroupValue(staleness(s.fs, r.m.seen)...)))
		}
		s.log.Debug(msg, attrs...)
	}
	return ok
}

// storeRecord writes m as the dependency record of id, when every stat it
// made was settled. It waits for the write a bounded time (unless
// WithRecordWait made it zero): long enough for a disk write, so that a
// process that exits after its first key still leaves its record, and
// short enough that a stalled store costs a scan little. A record that
// is not stored costs the next process a full scan, nothing more, so
// errors are only logged.
func (s *Scanner) storeRecord(ctx context.Context, id kcache.Digest, m *memo) {
	if s.records == nil || !m.recorded() {
		return
	}
	if s.writing.Add(1) > maxRecordWrites {
		s.writing.Add(-1)
		return
	}
	rec := encodeRecord(id, m)
	done := make(chan struct{})
	s.writes.Add(1)
	go func() {
		defer s.writes.Done()
		defer s.writing.Add(-1)
		defer close(done)
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordWriteTimeout)
		defer cancel()
		if err := s.records.StoreRecord(wctx, id, rec); err != nil {
			s.log.Debug("deps: dependency record not stored", "id", id, "err", err)
		}
	}()
	if s.recordWait <= 0 {
		return
	}
	wait := time.NewTimer(s.recordWait)
	defer wait.Stop()
	select {
	case <-done:
	case <-wait.C:
	case <-ctx.Done():
	}
}

// Bounds of record writes. A disk write of a record takes milliseconds;
// one that takes longer than recordWriteWait (by default; WithRecordWait)
// goes on in the background, at most maxRecordWrites at a time (past that
// a scan stores none), and is abandoned after recordWriteTimeout where
// the store heeds contexts.
const (
	recordWriteWait    = 100 * time.Millisecond
	recordWriteTimeout = 30 * time.Second
	maxRecordWrites    = 4
)

// DateHeader is the name of the key's header that holds the day a source
// expanding __DATE__ is built on: the compiler writes the day into the
// binary.
const DateHeader = "<__DATE__>"

// appendHeaders appends the memo's headers to dst, with the day of now
// where the sources expand __DATE__. dst comes back as it was on an error.
func (m *memo) appendHeaders(dst []kcache.Header, now time.Time) ([]kcache.Header, error) {
	if !m.date {
		return append(dst, m.headers...), nil
	}
	h, _, err := dateHeader(now)
	if err != nil {
		return dst, err
	}
	return append(append(dst, m.headers...), h), nil
}

// result returns a copy of the memo's headers and trace, with the day
// where the sources expand __DATE__.
func (m *memo) result(now time.Time) ([]kcache.Header, []Dependency, error) {
	headers, trace := slices.Clone(m.headers), slices.Clone(m.dependencies())
	if m.date {
		h, day, err := dateHeader(now)
		if err != nil {
			return nil, nil, err
		}
		headers = append(headers, h)
		trace = append(trace, Dependency{Name: DateHeader, Path: day, Digest: h.Digest, Rule: RuleClock})
	}
	return headers, trace, nil
}

// dateHeader returns the key's header for the day of now, and the day as
// clang writes it for __DATE__ ("Mmm dd yyyy"), in the zone the C
// library's localtime uses (dateZone); it fails with an error wrapping
// ErrUncacheable where that zone is not known.
func dateHeader(now time.Time) (kcache.Header, string, error) {
	day, err := Day(now)
	if err != nil {
		return kcache.Header{}, "", err
	}
	return kcache.Header{Name: DateHeader, Digest: sha256.Sum256([]byte(day))}, day, nil
}

// Day returns the day of now as a compiler in this process, calling the C
// library's localtime, writes it for __DATE__ ("Mmm dd yyyy"): in the zone
// glibc finds from this process's TZ, TZDIR and /etc/localtime, which is
// not always Go's time.Local (Go reads no POSIX rule such as TZ=UTC-14, nor
// TZDIR). It fails with an error wrapping ErrUncacheable where that zone is
// not known. The compile server checks a key's day with it, since its
// compilers write the day of the server's environment, not the client's.
func Day(now time.Time) (string, error) {
	loc, err := dateZone(os.LookupEnv, os.ReadFile)
	if err != nil {
		return "", err
	}
	return now.In(loc).Format("Jan _2 2006"), nil
}

// report logs why a source is uncacheable (or an include was found
// nowhere), once per source and reason: a build loop must not flood the
// log.
func (s *Scanner) report(source, reason string, attrs ...any) {
	id := source + "\x00" + reason
	s.reportMu.Lock()
	_, seen := s.reported[id]
	if !seen && len(s.reported) < maxReported {
		s.reported[id] = struct{}{}
	}
	s.reportMu.Unlock()
	if !seen {
		s.log.Debug("deps: "+reason, append([]any{"source", source}, attrs...)...)
	}
}

// maxReported bounds the memory of logged reasons; past it a reason may be
// logged again, which is harmless.
const maxReported = 4096
