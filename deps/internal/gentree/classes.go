// Package gentree generates random OpenCL C programs with include trees,
// for differential testing of the dependency scanner (package deps)
// against the compiler's own preprocessor: every file clang reads while it
// preprocesses a generated program must be among the scanner's
// dependencies.
//
// A program is built in two stages, so that failures can be attributed.
// The structure (which files exist, which includes, macros and
// conditionals they hold) is drawn first, by the structural classes. The
// bytes are rendered second, by the lexical classes (line endings, line
// splices, trigraphs, comments, ...), each decorating a line from a random
// stream of its own, seeded by the program, the line and the class: turning
// one lexical class off leaves the structure and every other class's
// decorations as they were, and deleting lines (to minimize a reproducer)
// leaves the other lines rendered as they were.
//
// Every generated program is meant to preprocess without error: each live
// include names a header that exists, found the way clang finds it (the
// generator resolves every spelling it writes with clang's search rules,
// following symbolic links as the kernel does). Dead branches may name
// headers that do not exist, as real code does.
package gentree

import (
	"fmt"
	"strings"
)

// Class is one feature class of generated programs: a family of constructs
// the generator can turn on or off.
type Class uint

// The structural classes shape what the program says; the lexical classes
// shape how its bytes spell it.
const (
	// Base: nested quoted and angled includes across -I directories
	// (PoCL's -I. first), subdirectories, spellings like "inc/x.h" and
	// "./x.h", headers absent on the path before the one found, -D
	// options. Always on.
	Base Class = iota
	// SameName: a/c.h and b/c.h, each included as "c.h" from its own
	// includer's directory, with a decoy c.h in the working directory.
	SameName
	// Guards: #ifndef guards, #pragma once, guardless headers included
	// twice.
	Guards
	// Defines: #define and #undef of ordinary macros, redefinitions.
	Defines
	// Computed: #include MACRO with the macro defined in a header, in
	// the includer, by -D, built with ## and #, chained, function-like,
	// chosen by a conditional, hashcat's M2S(INCLUDE_PATH/x.h).
	Computed
	// Rescan: a guardless header included twice whose child holds
	// #include H, with H redefined between the two inclusions.
	Rescan
	// Conditionals: #if, #ifdef, #ifndef, #elif, #else around includes,
	// live and dead (dead ones may name missing headers).
	Conditionals
	// HasInclude: __has_include and __has_include_next, directly and
	// through a macro (#define HAS(x) __has_include(x)).
	HasInclude
	// IncludeNext: same-named headers in . , inc and inc2 chained by
	// #include_next.
	IncludeNext
	// Symlink: lnk is a symbolic link to real/sub; headers are included
	// through it and include "../x.h" from there (resolved physically by
	// the kernel, lexically by a naive scanner), -I lnk, -I lnk/..
	Symlink
	// Options: -iquote, -isystem, -idirafter, -U, -I spelled joined,
	// with ./ and a trailing slash, or as an absolute path.
	Options
	// Forced: -include FILE.
	Forced

	// Splice: backslash-newline inside directives, comments and names.
	Splice
	// SpliceBlank: a backslash followed by blanks, then the newline
	// (clang splices it, with a warning).
	SpliceBlank
	// Trigraph: ??= for #, ??/ for a splicing backslash (clang enables
	// trigraphs for OpenCL C).
	Trigraph
	// Digraph: %: for #.
	Digraph
	// CRLF: lines end in CR LF.
	CRLF
	// CR: lines end in a lone CR (old Mac), alone or mixed with LF.
	CR
	// BOM: a UTF-8 byte order mark before the first line (a directive).
	BOM
	// Comments: comments in odd places: between # and the directive
	// name, before the #, spanning lines inside a directive, ending with
	// a spliced */, string literals that hold /* and //.
	Comments
	// Whitespace: tabs, form feeds and vertical tabs in directive lines.
	Whitespace
	// EOF: a file whose last line is a directive without a newline, or
	// which ends in a backslash.
	EOF

	// FeatureTest: __has_include and __has_include_next (directly or
	// through HAS(x)) of headers no branch includes, only defining a
	// macro: the presence of a file changes the program, not a read.
	// (Structural, but numbered after the lexical classes so that the
	// programs of the classes before it stay as they were.)
	FeatureTest

	// Systems: computed includes as CCCL-style trees build them (Thrust's
	// device systems, CUB's and CUTLASS's per-architecture headers): a
	// configuration header picks a system's name on one branch of an
	// #if/#elif chain over an option, and headers build include names
	// from it with ## and #, in angled and quoted forms, through a
	// macro that is #undef'd after use. (Numbered last, like
	// FeatureTest, so the programs of the classes before it stay.)
	Systems

	// Prior: a name defined only under an #ifdef of an option that is
	// given or not, then expanded in a computed include, with the files
	// of both its value and its bare name present: where the definition
	// was not made the compiler reads the bare name's. (Numbered last.)
	Prior

	numClasses
)

var classNames = [numClasses]string{
	Base:         "base",
	SameName:     "same-name",
	Guards:       "guards",
	Defines:      "defines",
	Computed:     "computed",
	Rescan:       "rescan",
	Conditionals: "conditionals",
	HasInclude:   "has-include",
	IncludeNext:  "include-next",
	Symlink:      "symlink",
	Options:      "options",
	Forced:       "forced-include",
	Splice:       "splice",
	SpliceBlank:  "splice-blank",
	Trigraph:     "trigraph",
	Digraph:      "digraph",
	CRLF:         "crlf",
	CR:           "lone-cr",
	BOM:          "bom",
	Comments:     "comments",
	Whitespace:   "whitespace",
	EOF:          "eof",
	FeatureTest:  "feature-test",
	Systems:      "systems",
	Prior:        "prior",
}

func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", uint(c))
}

// Lexical reports whether c only changes how a program is spelled, not
// what it says: it is applied when rendering, and can be turned off on a
// generated program (Program.Render's off set).
func (c Class) Lexical() bool { return c >= Splice && c <= EOF }

// Classes returns every class but Base, in order.
func Classes() []Class {
	out := make([]Class, 0, numClasses-1)
	for c := Base + 1; c < numClasses; c++ {
		out = append(out, c)
	}
	return out
}

// ParseClass returns the class named name.
func ParseClass(name string) (Class, error) {
	for c, n := range classNames {
		if n == name {
			return Class(c), nil
		}
	}
	return 0, fmt.Errorf("gentree: no class %q (have %s)", name, All())
}

// Set is a set of classes.
type Set uint64

// All is every class.
func All() Set { return Set(1)<<numClasses - 1 }

// Of returns the set of cs, with Base.
func Of(cs ...Class) Set {
	s := Set(1) << Base
	for _, c := range cs {
		s |= 1 << c
	}
	return s
}

// Has reports whether c is in s.
func (s Set) Has(c Class) bool { return s&(1<<c) != 0 }

// With returns s with c added.
func (s Set) With(c Class) Set { return s | 1<<c }

// Without returns s with c removed.
func (s Set) Without(c Class) Set { return s &^ (1 << c) }

// List returns the classes of s, in order.
func (s Set) List() []Class {
	var out []Class
	for c := Base; c < numClasses; c++ {
		if s.Has(c) {
			out = append(out, c)
		}
	}
	return out
}

// String names the classes of s, joined by commas.
func (s Set) String() string {
	var names []string
	for _, c := range s.List() {
		names = append(names, c.String())
	}
	return strings.Join(names, ",")
}

// ParseSet reads a comma-separated list of class names ("all" for every
// class); Base is always added.
func ParseSet(list string) (Set, error) {
	s := Of()
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		switch name {
		case "":
		case "all":
			s |= All()
		default:
			c, err := ParseClass(name)
			if err != nil {
				return 0, err
			}
			s = s.With(c)
		}
	}
	return s, nil
}
