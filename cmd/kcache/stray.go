package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
)

// compilerSummary is the line clang ends its diagnostics with. The
// diagnostics themselves are in the build log, which the command prints
// inside its report of the file, so the summary says nothing more.
var compilerSummary = regexp.MustCompile(`^[0-9]+ (error|warning)s? generated\.$|^[0-9]+ warnings? and [0-9]+ errors? generated\.$`)

// strayPrefix marks a line something other than the command wrote to
// standard error (the OpenCL runtime, its compiler), so that every line
// there is a message that says where it came from.
const strayPrefix = errorPrefix + "compiler: "

// strayFilter copies the lines read from r to w, dropping the compiler's
// summaries and prefixing the rest, until r ends.
func strayFilter(r io.Reader, w io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || compilerSummary.MatchString(line) {
			continue
		}
		fmt.Fprintln(w, strayPrefix+line)
	}
	// A line longer than the buffer stops the scan; the rest must still be
	// read, or the writer blocks on a full pipe.
	io.Copy(w, r)
}
