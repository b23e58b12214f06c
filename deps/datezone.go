package deps

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// dateZone returns the zone in which clang, calling the C library's
// localtime, writes the day of __DATE__, as glibc finds it from the
// environment (lookup) and its time zone files (read): with TZ unset,
// /etc/localtime (UTC where there is none); with TZ empty, UTC; otherwise
// the file TZ names (less a leading ':'), absolute or under $TZDIR
// (/usr/share/zoneinfo by default). Where that file cannot be read or
// parsed glibc reads TZ as a POSIX rule ("UTC-14", "<+14>-14"), which Go
// does not (time.Local is then UTC): the day is not known, and the error
// wraps ErrUncacheable. A key in Go's local day held Nov 25 where clang,
// under TZ=UTC-14, wrote Nov 26.
func dateZone(lookup func(string) (string, bool), read func(string) ([]byte, error)) (*time.Location, error) {
	tz, set := lookup("TZ")
	file := "/etc/localtime"
	switch {
	case set && tz == "":
		return time.UTC, nil
	case set:
		name := strings.TrimPrefix(tz, ":")
		if name == "" {
			return nil, fmt.Errorf("%w: TZ=%q: the zone of __DATE__ is not known", ErrUncacheable, tz)
		}
		dir, _ := lookup("TZDIR")
		if dir == "" {
			dir = "/usr/share/zoneinfo"
		}
		file = name
		if !filepath.IsAbs(name) {
			file = dir + "/" + name
		}
	}
	data, err := read(file)
	if err != nil && !set {
		return time.UTC, nil // no /etc/localtime: glibc uses UTC
	}
	if err == nil {
		loc, perr := time.LoadLocationFromTZData(tz, data)
		if perr == nil {
			return loc, nil
		}
		err = perr
	}
	return nil, fmt.Errorf("%w: the zone of __DATE__ is not known (TZ=%q, %s: %v)", ErrUncacheable, tz, file, err)
}
