package compileserver

import (
	"fmt"
	"time"
)

// Request is one compile a client asks of the server.
type Request struct {
	// Key is the digest of the kcache key the client computed; the server
	// logs it, and never stores anything under it.
	Key [32]byte
	// Compiler is the client's identity of its compiler (see
	// Compiler.Identity): the server compiles only with the same one.
	Compiler string
	// Env holds the environment variables, NAME=VALUE, that enter the key
	// and change what the compiler produces; the server compiles only if
	// its own are the same.
	Env []string
	// WorkDir is the client's working directory: relative paths in
	// Options and Name resolve against it, as in the client.
	WorkDir string
	// Name is the program's name for the compiler (its path, as the
	// client names it).
	Name string
	// Code is the program text.
	Code []byte
	// Options are the compiler's options, the target architecture
	// included.
	Options []string
	// Headers are handed to the compiler in memory.
	Headers []Header
	// NameExpressions are the names whose mangled names the client needs.
	NameExpressions []string
	// Format is the image wanted, as the compiler's plan names it.
	Format string
	// Files are every file and absent place the key was computed from:
	// the server checks each before compiling and answers StatusStale if
	// one differs.
	Files []File
	// MaxWait bounds how long the request may wait in the server's queue
	// before its compile starts; past it the answer is StatusBusy.
	MaxWait time.Duration
	// FilesLater says that Key and Files are not known yet: the client
	// sends them after the request (Client.Begin), while the server
	// compiles. The server answers only once they came and every file is
	// as the key says and unchanged since before the request arrived.
	FilesLater bool
	// WarmUp says that the client compiles itself and will not read the
	// reply: the server compiles to make its precompiled headers, to the
	// end even if the client hangs up.
	WarmUp bool
}

// Header is an in-memory header: the source's #include "Name" finds
// Content.
type Header struct {
	Name    string
	Content []byte
}

// File is one dependency of a key: a file with the digest of its content,
// an absent place that must stay absent, or the day for a source that
// expands __DATE__.
type File struct {
	Path   string
	Digest [32]byte
	Kind   FileKind
}

// FileKind says what a File asserts.
type FileKind uint8

const (
	// FilePresent asserts a file whose content has Digest.
	FilePresent FileKind = iota
	// FileAbsent asserts that nothing exists at Path.
	FileAbsent
	// FileDay asserts that today (the server's clock, as the compiler
	// writes __DATE__) is Path.
	FileDay
)

// Status is the outcome of a compile request.
type Status uint8

const (
	// StatusOK: Reply holds the image.
	StatusOK Status = iota
	// StatusCompileError: the compiler rejected the program; Reply.Log
	// holds its log.
	StatusCompileError
	// StatusStale: a file the key was computed from changed; the client
	// must recompute its key (or compile itself), never use a build.
	StatusStale
	// StatusBusy: the queue was full or the wait past the client's bound.
	StatusBusy
	// StatusMismatch: the server's compiler or environment is not the
	// client's.
	StatusMismatch
	// StatusFailed: the compile failed for another reason (Reply.Message).
	StatusFailed
)

var statusNames = [...]string{"ok", "compile error", "stale", "busy", "mismatch", "failed"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// Reply is the server's answer to a Request.
type Reply struct {
	Status  Status
	Message string // why, for anything but StatusOK
	Code    []byte // the image (CUBIN or PTX)
	Lowered []string
	Log     string
	// PCH says what NVRTC's automatic PCH did for this compile.
	PCH PCHUse
	// Compile is how long the compile itself took in the server.
	Compile time.Duration
}

// PCHUse is what the compiler's precompiled headers did for one compile.
type PCHUse uint8

const (
	// PCHNone: no PCH was created or used (or the compiler cannot say).
	PCHNone PCHUse = iota
	// PCHCreated: the compile created a PCH for later ones.
	PCHCreated
	// PCHUsed: the compile used a PCH an earlier one created.
	PCHUsed
)

var pchNames = [...]string{"none", "created", "used"}

// String names the use, for logs.
func (u PCHUse) String() string {
	if int(u) < len(pchNames) {
		return pchNames[u]
	}
	return fmt.Sprintf("pch(%d)", uint8(u))
}

// Stats is the server's state, for `kcache serve --json` and `kcache stats`.
type Stats struct {
	PID          int           `json:"pid"`
	Socket       string        `json:"socket"`
	Compiler     string        `json:"compiler"`
	Uptime       time.Duration `json:"uptime_ns"`
	IdleTimeout  time.Duration `json:"idle_timeout_ns"`
	Requests     int64         `json:"requests"`
	Compiled     int64         `json:"compiled"`
	CompileError int64         `json:"compile_errors"`
	Stale        int64         `json:"stale"`
	Busy         int64         `json:"busy"`
	Mismatch     int64         `json:"mismatch"`
	Failed       int64         `json:"failed"`
	Refused      int64         `json:"refused"` // connections of other users
	PCHCreated   int64         `json:"pch_created"`
	PCHHits      int64         `json:"pch_hits"`
	// PCHOtherContext counts compiles made without precompiled headers
	// because their working directory or options differed from the
	// compile that made them.
	PCHOtherContext int64 `json:"pch_other_context"`
	Retired         int64 `json:"retired"` // 1 once a changed header made the server retire
	// Early counts compiles begun before the client's key was known
	// (Request.FilesLater) and answered from that compile; EarlyRedone
	// those compiled again because a file had changed too recently to
	// tell whether the early compile read it as the key did;
	// EarlyAbandoned those the client did not need (its key hit).
	Early          int64         `json:"early"`
	EarlyRedone    int64         `json:"early_redone"`
	EarlyAbandoned int64         `json:"early_abandoned"`
	CompileTime    time.Duration `json:"compile_time_ns"`
	Queued         int           `json:"queued"`
	MaxRSS         int64         `json:"max_rss_bytes"`
	// Workers are the worker processes of a server that compiles in a
	// Pool; empty for one that compiles in its own process.
	Workers []WorkerStats `json:"workers,omitempty"`
}

// WorkerStats is one worker process of a Pool.
type WorkerStats struct {
	Slot int `json:"slot"`
	// PID is the worker's process, as of its last compile; 0 for none.
	PID      int   `json:"pid"`
	Compiles int64 `json:"compiles"`
	Busy     bool  `json:"busy"`
	// Context names (by a short digest) the context its precompiled
	// headers were made for; "" for none.
	Context string `json:"context,omitempty"`
	// RSS and PeakRSS are its resident memory now and at its peak.
	RSS     int64 `json:"rss_bytes"`
	PeakRSS int64 `json:"peak_rss_bytes"`
}

func encodeRequest(r *Request) []byte {
	e := &encoder{}
	e.bytes(r.Key[:])
	e.string(r.Compiler)
	e.strings(r.Env)
	e.string(r.WorkDir)
	e.string(r.Name)
	e.bytes(r.Code)
	e.strings(r.Options)
	e.uint(uint64(len(r.Headers)))
	for _, h := range r.Headers {
		e.string(h.Name)
		e.bytes(h.Content)
	}
	e.strings(r.NameExpressions)
	e.string(r.Format)
	e.files(r.Files)
	e.uint(uint64(max(r.MaxWait, 0)))
	e.bool(r.FilesLater)
	e.bool(r.WarmUp)
	return e.b
}

func (e *encoder) files(files []File) {
	e.uint(uint64(len(files)))
	for _, f := range files {
		e.string(f.Path)
		e.bytes(f.Digest[:])
		e.uint(uint64(f.Kind))
	}
}

func (e *encoder) bool(b bool) {
	if b {
		e.uint(1)
	} else {
		e.uint(0)
	}
}

func (d *decoder) files() []File {
	n := d.Count(35)
	if n == 0 {
		return nil
	}
	files := make([]File, n)
	for i := range files {
		files[i] = File{Path: d.string(), Digest: d.digest()}
		if k := d.Uvarint(); k <= uint64(FileDay) {
			files[i].Kind = FileKind(k)
		} else {
			d.fail("unknown file kind")
		}
	}
	return files
}

func (d *decoder) bool() bool {
	switch d.Uvarint() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail("a flag other than 0 or 1")
	return false
}

// encodeFiles is the payload of msgFiles.
func encodeFiles(key [32]byte, files []File) []byte {
	e := &encoder{}
	e.bytes(key[:])
	e.files(files)
	return e.b
}

func decodeFiles(p []byte) ([32]byte, []File, error) {
	d := newDecoder(p)
	key, files := d.digest(), d.files()
	return key, files, d.done()
}

func decodeRequest(p []byte) (*Request, error) {
	d := newDecoder(p)
	r := &Request{Key: d.digest(), Compiler: d.string(), Env: d.strings(), WorkDir: d.string(),
		Name: d.string(), Code: d.Bytes(), Options: d.strings()}
	if n := d.Count(2); n > 0 {
		r.Headers = make([]Header, n)
		for i := range r.Headers {
			r.Headers[i] = Header{Name: d.string(), Content: d.Bytes()}
		}
	}
	r.NameExpressions = d.strings()
	r.Format = d.string()
	r.Files = d.files()
	r.MaxWait = time.Duration(min(d.Uvarint(), uint64(time.Hour)))
	r.FilesLater = d.bool()
	r.WarmUp = d.bool()
	return r, d.done()
}

func encodeReply(r *Reply) []byte {
	e := &encoder{}
	e.uint(uint64(r.Status))
	e.string(r.Message)
	e.bytes(r.Code)
	e.strings(r.Lowered)
	e.string(r.Log)
	e.uint(uint64(r.PCH))
	e.uint(uint64(max(r.Compile, 0)))
	return e.b
}

func decodeReply(p []byte) (*Reply, error) {
	d := newDecoder(p)
	r := &Reply{}
	if s := d.Uvarint(); s <= uint64(StatusFailed) {
		r.Status = Status(s)
	} else {
		d.fail("unknown status")
	}
	r.Message, r.Code, r.Lowered, r.Log = d.string(), d.Bytes(), d.strings(), d.string()
	if u := d.Uvarint(); u <= uint64(PCHUsed) {
		r.PCH = PCHUse(u)
	} else {
		d.fail("unknown PCH use")
	}
	r.Compile = time.Duration(min(d.Uvarint(), uint64(24*time.Hour)))
	return r, d.done()
}
