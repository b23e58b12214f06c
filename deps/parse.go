package deps

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
)

// parsedFile is what the scanner keeps of one file's text: its directives
// and the facts about it that decide whether a key can hold it.
type parsedFile struct {
	directives []directive
	// clock names the first predefined macro of the text that the
	// compiler expands to the time of the build ("" for none).
	clock string
	// namesFiles says the text expands a macro holding a file's path
	// (fileMacros).
	namesFiles bool
	// restores says the text may restore a macro's earlier state
	// (restoreMarks): #pragma pop_macro, or a _Pragma that could say it.
	restores bool
	// pastesPragma and stringizes say the text defines a macro that may
	// paste the name _Pragma from pieces, and one that stringizes a
	// parameter: the two halves of a _Pragma no text names, which the
	// scan puts together across the files it reads (scan.operators).
	pastesPragma, stringizes bool
	// pragmaPiece says the text spells a piece that a paste can begin
	// the name _Pragma with (holdsPragmaPiece): the third part of such a
	// _Pragma, without which no paste of any text makes its name.
	pragmaPiece bool
	// targetChains are the pasteTargets a #define of the text may paste;
	// targetWords the pieces of them it spells as words (paste.go).
	targetChains targetSet
	targetWords  pasteWords
	// unsure says why the scanner cannot model the text exactly ("" when
	// it can): a source that reads it is uncacheable.
	unsure string
}

// clockMacros are the predefined macros that expand to the time of the
// build or of a file. __DATE__ enters a key as the date; the others make
// a program uncacheable, since no key could change with them.
var clockMacros = []string{"__TIME__", "__TIMESTAMP__", "__DATE__"}

// restoreMarks are the texts through which a file may restore a macro to
// a state it had before a definition or #undef the scan took as certain:
// #pragma pop_macro("X") (after push_macro, X is again what it was
// then, undefined or the compiler's), or the _Pragma operator, whose
// string may say the same after macro expansion, or Microsoft's __pragma
// (with -fms-extensions), whose operand is tokens, not a string.
var restoreMarks = []string{"pop_macro", "_Pragma", "__pragma"}

// restoreMarked reports whether text holds one of the restoreMarks.
func restoreMarked[T string | []byte](text T) bool {
	for _, m := range restoreMarks {
		var in bool
		switch t := any(text).(type) {
		case string:
			in = strings.Contains(t, m)
		case []byte:
			in = bytes.Contains(t, []byte(m))
		}
		if in {
			return true
		}
	}
	return false
}

// parseFile parses src as the compiler's translation phases 1 to 4 see
// it, lexed as mode says. Where mode leaves the trigraphs or the language
// unknown, src is parsed without trigraphs and as C, and again the other
// way where it holds what either would change: a file whose directives
// then differ is beyond the scanner.
func parseFile(src []byte, mode lexMode) parsedFile {
	tri := mode.tri == TrigraphsOn
	text := normalize(src, tri)
	p := parseText(text, mode.cpp)
	if mode.tri == TrigraphsUnknown && hasTrigraph(src) && !reflect.DeepEqual(p, parseText(normalize(src, true), mode.cpp)) {
		p.unsure = "its directives differ with and without trigraphs, and whether the compiler replaces them is not known"
	}
	if !mode.onlyC && !mode.cpp && p.unsure == "" {
		if hasCPlusPlusLexemes(text) && !reflect.DeepEqual(p, parseText(text, true)) {
			p.unsure = "its directives differ where C++'s raw string literals and digit separators are lexed, and the compiler may lex C++"
		}
	}
	// The words are read once, from the text as the compiler reads it;
	// where it may lex either way, targetWords reads both where they
	// differ.
	p.targetWords = targetWords(text, mode.cpp, p.directives)
	p.markUnbalancedBranches()
	return p
}

// markUnbalancedBranches marks each conditional directive that opens a
// branch the text is not balanced in (pasteWords.branches), for the scan
// to decide whether the compiler may read it; where the whole text is
// not balanced, none needs a mark.
func (p *parsedFile) markUnbalancedBranches() {
	w := &p.targetWords
	if len(w.branches) == 0 || w.unbalanced != "" {
		return
	}
	for i := range p.directives {
		if d := &p.directives[i]; (d.kind == dIf || d.kind == dElse) && slices.Contains(w.branches, d.at) {
			d.unbalanced = true
		}
	}
}

// parseText parses normalized text, lexed as C++ where cpp is set.
func parseText(text []byte, cpp bool) parsedFile {
	var p parsedFile
	p.directives, p.unsure = parseDirectives(text, cpp)
	// The text is searched, not its tokens: a mention in a comment costs
	// a needless refusal at worst, a use the tokens hid would cost a
	// stale binary.
	for _, m := range fileMacros {
		p.namesFiles = p.namesFiles || bytes.Contains(text, []byte(m))
	}
	p.restores = restoreMarked(text)
	p.pragmaPiece = holdsPragmaPiece(text)
	for _, d := range p.directives {
		if d.kind == dDefine {
			p.targetChains |= d.macro.pasteTargets()
			pastes, stringizes := d.macro.restoreOperators()
			p.pastesPragma = p.pastesPragma || pastes
			p.stringizes = p.stringizes || stringizes
		}
	}
	if p.unsure == "" && namesDependencyPragma(text) {
		p.unsure = dependencyUnsure
	}
	for _, m := range clockMacros {
		if bytes.Contains(text, []byte(m)) {
			p.clock = m
			break
		}
	}
	return p
}

// dependencyWord is the pragma, #pragma GCC dependency "x.h" (or clang
// dependency, or the same through _Pragma or __pragma), that makes a
// build look for x.h along the include path, fail where it is missing,
// and warn (with -Werror, fail) where it is newer than the file that
// names it: file times, which no key holds.
const dependencyWord = "dependency"

// dependencyUnsure is why a source that may run the pragma is refused.
const dependencyUnsure = "it may run #pragma GCC dependency, whose outcome depends on file times that no key holds"

// namesDependencyPragma reports whether text may run the dependency
// pragma outside a directive (parseDirectives finds the #pragma form,
// comments and all): the word dependency after GCC or clang with only
// blanks between, as a _Pragma's string spells it. A mention in a comment
// costs a needless refusal at most. A _Pragma whose string a macro
// stringizes from words it expands (_Pragma(#x), x holding a macro that
// expands to the word) is not found: its outcome is a failed build or a
// warning where the cache serves the binary of the same text, never
// another binary.
func namesDependencyPragma(text []byte) bool {
	for at := 0; ; {
		i := bytes.Index(text[at:], []byte(dependencyWord))
		if i < 0 {
			return false
		}
		i += at
		at = i + len(dependencyWord)
		if (i > 0 && continuesWord(text[i-1])) || (at < len(text) && continuesWord(text[at])) {
			continue
		}
		if w := wordBefore(text[:i]); w == "GCC" || w == "clang" {
			return true
		}
	}
}

// wordBefore returns the identifier that ends text once its trailing
// blanks are skipped ("" for none).
func wordBefore(text []byte) string {
	end := len(bytes.TrimRight(text, " \t\n\r\v\f"))
	start := end
	for start > 0 && continuesWord(text[start-1]) {
		start--
	}
	return string(text[start:end])
}
