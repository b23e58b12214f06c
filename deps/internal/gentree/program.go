package gentree

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// RootVar stands for the program's root directory in Program.Options; Args
// replaces it.
const RootVar = "@ROOT@"

// Program is one generated translation unit and the tree it includes from.
// All paths are relative to the program's root, the compiler's working
// directory.
type Program struct {
	// Seed and Classes generated the program.
	Seed    int64
	Classes Set
	// Main is the translation unit: PoCL compiles program text from a
	// temporary file of its cache directory, so Main lies in a directory
	// of its own, which clang searches first for Main's quoted includes.
	Main string
	// Files are Main and the headers, Main first.
	Files []*File
	// Links are symbolic links (to directories).
	Links []Link
	// Dirs are directories to create even when empty (search
	// directories named by options).
	Dirs []string
	// Options are the build options the application passes, as an
	// argument vector; PoCL puts -I. ahead of them. RootVar stands for the
	// root in absolute paths.
	Options []string
}

// Link is a symbolic link at Path (relative to the root) whose content is
// Target (relative to the link's directory).
type Link struct{ Path, Target string }

// File is one source file.
type File struct {
	Path  string
	Lines []Line
}

// Line is one logical line of a file.
type Line struct {
	// ID is unique in the program; with the seed and a class it seeds
	// the line's decorations.
	ID int
	// Class is the class whose construct the line belongs to, for
	// attributing a minimized failure.
	Class Class
	// Directive is the directive's name ("include", "define", ...); ""
	// for a line of program text.
	Directive string
	// Text follows the directive's name, or is the whole text line.
	Text string
}

// Args returns the options with root substituted for RootVar.
func (p *Program) Args(root string) []string {
	out := make([]string, len(p.Options))
	for i, o := range p.Options {
		out[i] = strings.ReplaceAll(o, RootVar, root)
	}
	return out
}

// OptionString returns the options as the application's one build options
// string (no option the generator writes holds blanks or quotes).
func (p *Program) OptionString(root string) string {
	return strings.Join(p.Args(root), " ")
}

// Clone returns a deep copy of p, to minimize without touching p.
func (p *Program) Clone() *Program {
	q := *p
	q.Files = make([]*File, len(p.Files))
	for i, f := range p.Files {
		q.Files[i] = &File{Path: f.Path, Lines: slices.Clone(f.Lines)}
	}
	q.Links = slices.Clone(p.Links)
	q.Dirs = slices.Clone(p.Dirs)
	q.Options = slices.Clone(p.Options)
	return &q
}

// LineIDs returns the IDs of every line, file by file.
func (p *Program) LineIDs() []int {
	var out []int
	for _, f := range p.Files {
		for _, l := range f.Lines {
			out = append(out, l.ID)
		}
	}
	return out
}

// WithoutLines returns a copy of p without the lines whose IDs are in drop.
func (p *Program) WithoutLines(drop map[int]bool) *Program {
	q := p.Clone()
	for _, f := range q.Files {
		f.Lines = slices.DeleteFunc(f.Lines, func(l Line) bool { return drop[l.ID] })
	}
	return q
}

// WithoutEmptyFiles returns a copy of p without the files other than Main
// that hold no line and are named in drop.
func (p *Program) WithoutEmptyFiles(drop map[string]bool) *Program {
	q := p.Clone()
	q.Files = slices.DeleteFunc(q.Files, func(f *File) bool {
		return f.Path != p.Main && len(f.Lines) == 0 && drop[f.Path]
	})
	return q
}

// EmptyFiles returns the paths of the files other than Main that hold no
// line.
func (p *Program) EmptyFiles() []string {
	var out []string
	for _, f := range p.Files {
		if f.Path != p.Main && len(f.Lines) == 0 {
			out = append(out, f.Path)
		}
	}
	return out
}

// LineClasses returns the classes of the lines p holds, for attribution.
func (p *Program) LineClasses() Set {
	var s Set
	for _, f := range p.Files {
		for _, l := range f.Lines {
			s = s.With(l.Class)
		}
	}
	return s
}

// Write creates p's tree under root, rendered without the lexical classes
// of off.
func (p *Program) Write(root string, off Set) error {
	for _, d := range p.Dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	for path, b := range p.Render(off) {
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			return err
		}
	}
	for _, l := range p.Links {
		full := filepath.Join(root, l.Path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(l.Target, full); err != nil {
			return err
		}
	}
	return nil
}

// Describe returns a readable account of p: what generated it, its
// options and links (the files are written beside it).
func (p *Program) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d\nclasses %s\nmain %s\noptions (after PoCL's -I.) %q\n", p.Seed, p.Classes, p.Main, p.Options)
	for _, l := range p.Links {
		fmt.Fprintf(&b, "link %s -> %s\n", l.Path, l.Target)
	}
	for _, f := range p.Files {
		fmt.Fprintf(&b, "file %s: %d lines\n", f.Path, len(f.Lines))
	}
	return b.String()
}

// rng returns the random stream of one decision: the program's seed, a
// subject (a file's path or a line's ID) and the class deciding.
func (p *Program) rng(subject string, c Class) *rand.Rand {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%d", subject, c)
	return rand.New(rand.NewPCG(uint64(p.Seed), h.Sum64()))
}

// on reports whether lexical class c decorates this rendering.
func (p *Program) on(c Class, off Set) bool { return p.Classes.Has(c) && !off.Has(c) }

// Render returns the bytes of every file, by path, without the lexical
// classes of off.
func (p *Program) Render(off Set) map[string][]byte {
	out := make(map[string][]byte, len(p.Files))
	for _, f := range p.Files {
		out[f.Path] = p.renderFile(f, off)
	}
	return out
}

func (p *Program) renderFile(f *File, off Set) []byte {
	var b strings.Builder
	// Line endings: a file's style is drawn by each class on its own, so
	// turning CRLF off does not change which files CR picks.
	eol, mixed := "\n", false
	if p.on(CRLF, off) && p.rng(f.Path, CRLF).Float64() < 0.6 {
		eol = "\r\n"
	}
	if p.on(CR, off) {
		r := p.rng(f.Path, CR)
		switch x := r.Float64(); {
		case x < 0.4:
			eol = "\r"
		case x < 0.7:
			eol, mixed = "\r", true
		}
	}
	if p.on(BOM, off) && p.rng(f.Path, BOM).Float64() < 0.7 {
		b.WriteString("\xEF\xBB\xBF")
	}
	for i, l := range f.Lines {
		le := eol
		if mixed && p.rng(fmt.Sprint(l.ID), CR).IntN(2) == 0 {
			le = "\n"
		}
		text := p.renderLine(l, le, off)
		if i == len(f.Lines)-1 && p.on(EOF, off) {
			switch p.rng(f.Path, EOF).IntN(3) {
			case 0: // the last line has no newline
				b.WriteString(text)
				return []byte(b.String())
			case 1: // the file ends in a backslash after the last newline
				b.WriteString(text + le + "\\")
				return []byte(b.String())
			}
		}
		b.WriteString(text)
		b.WriteString(le)
	}
	return []byte(b.String())
}

// renderLine spells one line without its line ending.
func (p *Program) renderLine(l Line, eol string, off Set) string {
	if l.Directive == "" {
		return l.Text
	}
	id := fmt.Sprint(l.ID)
	base := p.rng(id, Base)
	var pre, hash, sep1, name, sep2, text string
	hash, name, text = "#", l.Directive, l.Text
	if text != "" {
		sep2 = " "
	}
	if base.IntN(4) == 0 {
		sep1 = " " // "# include" is ordinary C
	}
	if base.IntN(4) == 0 {
		pre = "  "
	}
	if p.on(Whitespace, off) {
		r := p.rng(id, Whitespace)
		ws := []string{"\t", "\f", "\v", " \t ", "\f\v"}
		if r.IntN(2) == 0 {
			pre = ws[r.IntN(len(ws))]
		}
		if r.IntN(2) == 0 {
			sep1 = ws[r.IntN(len(ws))]
		}
		if text != "" && r.IntN(2) == 0 {
			sep2 = ws[r.IntN(len(ws))]
		}
	}
	if p.on(Comments, off) {
		r := p.rng(id, Comments)
		switch r.IntN(6) {
		case 0:
			sep1 = "/**/"
		case 1:
			sep1 = " /* a comment */ "
		case 2: // a comment spanning lines inside the directive
			sep1 = "/* a comment" + eol + " on two lines */"
		case 3:
			pre = "/* before */ " + pre
		case 4: // a comment that ends on the directive's line
			pre = "/* a comment" + eol + " ending here */ "
		}
		if text != "" && r.IntN(3) == 0 {
			sep2 = " /* x */ "
		}
		// Text that a naive lexer reads as the start of a comment.
		switch r.IntN(5) {
		case 0:
			pre = `const char *c` + id + ` = "/* not a comment";` + eol + pre
		case 1:
			pre = `const char *c` + id + ` = "// nor this";` + eol + pre
		case 2:
			pre = `int q` + id + ` = '"';` + eol + pre
		}
	}
	splice := ""
	switch {
	case p.on(Trigraph, off) && p.rng(id, Trigraph).IntN(3) == 0:
		splice = "??/" + eol
	case p.on(SpliceBlank, off) && p.rng(id, SpliceBlank).IntN(2) == 0:
		splice = "\\" + []string{" ", "\t", "  \t "}[p.rng(id, SpliceBlank).IntN(3)] + eol
	case p.on(Splice, off) && p.rng(id, Splice).IntN(2) == 0:
		splice = "\\" + eol
	}
	if splice != "" {
		// Somewhere in the directive's name or in its operand, or
		// both; phase 2 removes it before anything is tokenized.
		r := p.rng(id, Splice)
		if r.IntN(2) == 0 && len(name) > 1 {
			k := 1 + r.IntN(len(name)-1)
			name = name[:k] + splice + name[k:]
		} else if r.IntN(2) == 0 {
			sep1 = splice + sep1
		}
		// Not in a __has_include operand: clang 15 fails to lex
		// "<x.h>\⏎)" there, or "x\ ⏎.h" inside HAS("..."), with
		// "failure when lexing a numeric literal", a clang quirk
		// that would reject the program.
		if len(text) > 1 && r.IntN(2) == 0 && !strings.Contains(text, "__has_include") && !strings.Contains(text, "HAS(") {
			k := 1 + r.IntN(len(text)-1)
			text = text[:k] + splice + text[k:]
		}
		if r.IntN(4) == 0 {
			// A block comment whose end is spliced, on the line before.
			pre = "/* spliced end *" + splice + "/" + eol + pre
		}
	}
	switch {
	case p.on(Trigraph, off) && p.rng(id, Trigraph).IntN(2) == 0:
		hash = "??="
	case p.on(Digraph, off) && p.rng(id, Digraph).IntN(2) == 0:
		hash = "%:"
	}
	return pre + hash + sep1 + name + sep2 + text
}
