package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// Exit statuses, as clig.dev and most Unix tools use them.
const (
	exitFailure = 1 // the command ran and failed
	exitUsage   = 2 // the command line was wrong
	// exitInterrupted is a shell's status for a command ended by SIGINT
	// (128 + 2), which kcache returns when it stops early, intact.
	exitInterrupted = 130
)

// usageError marks a mistake in the command line: a bad flag, a missing or
// extra argument. It exits with status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// configFromEnv reads the KCACHE_* variables. A bad value is bad usage,
// as a bad flag is: it exits with status 2.
func configFromEnv() (kcache.Config, error) {
	cfg, err := kcache.ConfigFromEnv()
	if err != nil {
		return cfg, usageError{err}
	}
	return cfg, nil
}

// usagef returns a usageError.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// args wraps a cobra argument check so that its failure is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageError{fmt.Errorf("%w; see %s --help", err, cmd.CommandPath())}
		}
		return nil
	}
}

// flagNamePattern finds the flag's name in pflag's message for a value
// that does not parse: `invalid argument "x" for "-j, --jobs" flag: ...`.
var flagNamePattern = regexp.MustCompile(`for "(?:-\w, )?(--[\w-]+)" flag`)

// plainFlagError rewords pflag's error for a number or boolean that does
// not parse, which otherwise ends in Go's "strconv.ParseInt: parsing "x":
// invalid syntax", into what the flag wants. Other errors pass unchanged.
func plainFlagError(err error) error {
	var num *strconv.NumError
	var bad interface{ GetValue() string }
	if !errors.As(err, &num) || !errors.As(err, &bad) {
		return err
	}
	name := "flag"
	if m := flagNamePattern.FindStringSubmatch(err.Error()); m != nil {
		name = m[1]
	}
	want := "a whole number"
	switch {
	case num.Func == "ParseBool":
		want = "true or false"
	case strings.HasPrefix(num.Func, "ParseFloat"):
		want = "a number"
	case errors.Is(num.Err, strconv.ErrRange):
		want = "a smaller number"
	}
	return fmt.Errorf("%s %q: want %s", name, bad.GetValue(), want)
}

// noArgs is cobra.NoArgs with a message that names the command, rather
// than taking the argument for an unknown subcommand.
func noArgs(cmd *cobra.Command, a []string) error {
	if len(a) > 0 {
		return fmt.Errorf("%s takes no arguments, got %q", cmd.Name(), a[0])
	}
	return nil
}

// exitCode returns the exit status for an error a command returned.
func exitCode(err error) int {
	var ee exitError
	var ue usageError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue), strings.HasPrefix(err.Error(), "unknown command"):
		return exitUsage
	}
	return exitFailure
}

// addCacheCommands adds the commands that look into and manage the cache,
// and makes flag errors usage errors.
func addCacheCommands(root *cobra.Command) {
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w; see %s --help", plainFlagError(err), cmd.CommandPath())}
	})
	root.AddCommand(newStatsCmd(), newLsCmd(), newShowCmd(), newVerifyCmd(), newPruneCmd(), newClearCmd(),
		newWhyCmd(), newDiffCmd(), newExportCmd(), newImportCmd(), newWarmCmd())
}

// streams are where a command writes: data to out, status and progress to
// errOut. What a person sees depends on whether out is a terminal: tables
// with headers and short IDs for people, plain tab-separated lines with
// full IDs for scripts.
type streams struct {
	out, errOut io.Writer
	tty         bool // out is a terminal
	errTTY      bool // errOut is a terminal: progress may be drawn there
	exactBytes  bool // --bytes: sizes in bytes, not human units
	width       int  // columns a table may take on the terminal
}

// newStreams returns the command's streams, judging whether stdout is a
// terminal.
func newStreams(cmd *cobra.Command) *streams {
	s := &streams{out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr(),
		tty: isTerminal(cmd.OutOrStdout()), errTTY: isTerminal(cmd.ErrOrStderr()), width: defaultWidth}
	if s.tty {
		s.width = terminalWidth(s.out)
	}
	return s
}

// isTerminal reports whether w (a writer or a reader) is a character
// device: a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// size formats a byte count: "1.5 MiB", or exact with --bytes.
func (s *streams) size(n int64) string {
	if s.exactBytes || n < 0 {
		return fmt.Sprint(n)
	}
	return humanize.IBytes(uint64(n))
}

// shortID is how many hex digits of an ID a table shows: 12, as git and
// docker show, unique in any cache of realistic size (Find resolves it).
const shortID = 12

// id formats an entry ID: short for people, full for scripts.
func (s *streams) id(id string) string {
	if s.tty && len(id) > shortID {
		return id[:shortID]
	}
	return id
}

// age formats how long ago t was, in its largest whole unit: "40s", "5m",
// "3h", "12d".
func age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case t.IsZero():
		return "-"
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// plural formats a count of things: "1 file", "3 files".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// usePrecision is how precisely the cache records an entry's last use:
// the disk tier refreshes an entry's access time on a hit only when it is
// an hour old (disk's mtimeInterval), so that hits write nothing most of
// the time. An entry used a minute ago may show as used 59 minutes ago.
const usePrecision = time.Hour

// usedAge formats how long ago an entry was last used, no more precisely
// than the cache records it: "<1h" for anything within the hour.
func usedAge(now, t time.Time) string {
	if !t.IsZero() && now.Sub(t) < usePrecision {
		return "<1h"
	}
	return age(now, t)
}

// useAgeValue is an --older-than flag: an age of last use, which cannot
// be told apart below usePrecision.
type useAgeValue struct{ ageValue }

func (v useAgeValue) Set(s string) error {
	var d time.Duration
	if err := (ageValue{&d}).Set(s); err != nil {
		return err
	}
	if d > 0 && d < usePrecision {
		return fmt.Errorf("under %v: the cache records last use to within an hour, so younger entries cannot be told apart", usePrecision)
	}
	*v.d = d
	return nil
}

// duration formats a build time: "850ms", "2.4s", "3m10s".
func duration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// openStore opens the persistent tier the environment configures, for
// commands that work on the cache directly, creating its directory if
// need be.
func openStore() (*disk.Store, error) {
	cfg, err := configFromEnv()
	if err != nil {
		return nil, fmt.Errorf("%w; fix the variable or unset it", err)
	}
	return openStoreAt(cfg)
}

// noCacheError is what openExisting returns when the cache directory does
// not exist: a command that only reads reports an empty cache rather than
// create one (with HOME unset or wrong, in a place nobody meant).
type noCacheError struct{ cfg kcache.Config }

func (e noCacheError) Error() string {
	return fmt.Sprintf("no cache at %s: nothing has been stored there yet", e.cfg.Dir)
}

// openExisting opens the persistent tier for a command that only reads
// it, or returns a noCacheError when its directory does not exist.
func openExisting() (*disk.Store, error) {
	cfg, err := configFromEnv()
	if err != nil {
		return nil, fmt.Errorf("%w; fix the variable or unset it", err)
	}
	if cfg.Dir != "" {
		if _, err := os.Stat(cfg.Dir); errors.Is(err, fs.ErrNotExist) {
			return nil, noCacheError{cfg}
		}
	}
	return openStoreAt(cfg)
}

// openStoreAt opens the persistent tier cfg configures.
func openStoreAt(cfg kcache.Config) (*disk.Store, error) {
	if cfg.Dir == "" {
		return nil, errors.New("no cache directory: set KCACHE_DIR to an absolute path (or HOME or XDG_CACHE_HOME)")
	}
	st, err := disk.Open(disk.FromConfig(cfg))
	if errors.Is(err, disk.ErrUnsafeDir) {
		return nil, unsafeDirError(err, cfg.Dir)
	}
	if err != nil {
		return nil, fmt.Errorf("%w; check KCACHE_DIR", err)
	}
	return st, nil
}

// unsafeDirError explains the ownership rule a cache directory broke, and
// the ways out. The rule exists because a binary in the cache is code the
// user will run: one that another user can write is one they can plant.
func unsafeDirError(err error, dir string) error {
	fix := fmt.Sprintf("chmod -R go-w %s", dir)
	var st unix.Stat_t
	if unix.Stat(dir, &st) == nil && int(st.Uid) != os.Geteuid() {
		fix = fmt.Sprintf("chown -R \"$(id -u)\" %s", dir)
	}
	return fmt.Errorf("%w; the cache must belong to you and be writable by you alone (or be root's, or your group's "+
		"with KCACHE_SHARED=1), as a binary anyone else can write is code they can make you run: take it over (%s), "+
		"or set KCACHE_DIR to a directory of your own", err, fix)
}

// sizeValue is a flag holding a byte size ("512MiB", "8G").
type sizeValue struct{ n *int64 }

func (v sizeValue) String() string {
	if v.n == nil || *v.n == 0 {
		return ""
	}
	return fmt.Sprint(*v.n)
}
func (v sizeValue) Set(s string) (err error) { *v.n, err = kcache.ParseSize(s); return err }
func (v sizeValue) Type() string             { return "SIZE" }

// ageValue is a flag holding an age ("7d", "36h", "90m").
type ageValue struct{ d *time.Duration }

func (v ageValue) String() string {
	if v.d == nil || *v.d == 0 {
		return ""
	}
	return v.d.String()
}
func (v ageValue) Set(s string) (err error) { *v.d, err = kcache.ParseAge(s); return err }
func (v ageValue) Type() string             { return "AGE" }
