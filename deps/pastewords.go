package deps

import (
	"bytes"
	"slices"
)

// pasteWords are the pieces of pasteTargets a text spells as words
// outside comments and literals (targetWords).
type pasteWords struct {
	// all holds every such piece; grouped those of them spelled on a
	// directive's line or within parentheses.
	all, grouped []string
	// unbalanced says why the text is not balanced, and is empty where it
	// is: its parentheses outside its directives' lines pair up within the
	// text and within each branch of each conditional block (none closes
	// what the branch did not open, every one the branch opens it closes),
	// and every include stands outside them.
	unbalanced string
	// branches holds the indexes of the introducers of the directives
	// (#if, #elif, #else and their kin) that open the branches of
	// conditional blocks in which the text is not balanced, where it is
	// balanced outside them. Each branch ends at its block's depth
	// whatever it holds, so the text the compiler reads is balanced
	// unless it reads one of these branches: the scan decides
	// (directive.unbalanced).
	branches []int
}

// targetWords returns the pieces of pasteTargets that text spells as
// words outside comments and literals (codeWords): lexed as C++14 or
// later where cpp is set (raw strings and digit separators), and
// otherwise in each of the readings of C and C++ where they differ. A
// word beside a byte clang may read as part of an identifier ($, a UTF-8
// letter) counts: it costs a needless widening at most.
//
// A word of a text's lines outside its directives that stands outside
// every parenthesis can be no macro's argument where every text the
// compiler reads is balanced (pasteWords): a call's arguments run from
// its ( to the ) that pairs with it, through text as it is read, and a
// call whose ( a definition's body gives, read before such a word, would
// need a ) the text did not open to end (or go on past the end of the
// text, which an include within parentheses would hide). A conditional
// block's branches each pair up from the depth the block began at, so
// whichever the build takes, the text it reads is balanced as counted.
// The word may still be anything else (a macro's name among them), but
// no paste takes it.
//
// dirs are text's directives (parseDirectives), where known: the
// branches hold only where each reading meets the same conditional
// directives, each at the same index, and elsewhere (the lexers read a
// comment or a literal apart) the whole text is not balanced. Without
// them the branches are not checked, and hold for no scan.
func targetWords(text []byte, cpp bool, dirs []directive) pasteWords {
	var words pasteWords
	add := func(w []byte, grouped bool) {
		if len(w) > maxTargetLen || !inTargetAlphabet(w) || !targetPieceSet()[string(w)] {
			return
		}
		if !slices.Contains(words.all, string(w)) {
			words.all = append(words.all, string(w))
		}
		if grouped && !slices.Contains(words.grouped, string(w)) {
			words.grouped = append(words.grouped, string(w))
		}
	}
	// An apostrophe after a number is a digit separator in C++14 and C23,
	// a character literal's in C before them and in C++11: where the
	// compiler may lex either and the text holds one, the words of both
	// readings count, and both must be balanced.
	r := wordReading{separators: cpp, rawStrings: cpp}
	lx := codeWords(text, r, dirs, add)
	words.unbalanced, words.branches = lx.unbalanced, lx.branches
	if lx.other && !cpp {
		r.separators = !r.separators
		lx = codeWords(text, r, dirs, add)
		if words.unbalanced == "" {
			words.unbalanced = lx.unbalanced
		}
		for _, b := range lx.branches {
			if !slices.Contains(words.branches, b) {
				words.branches = append(words.branches, b)
			}
		}
	}
	if bytes.Contains(text, []byte(userLabelPrefix)) {
		add([]byte("_"), true)
	}
	return words
}

// wordReading is how codeWords reads what C and C++ lex apart.
type wordReading struct {
	// separators reads an apostrophe within a number as a digit
	// separator, not as the start of a character literal.
	separators bool
	// rawStrings reads R"delimiter(...)delimiter" as a raw string literal
	// (C++11); without it, a text that holds R" is read in doubt.
	rawStrings bool
}

// codeWords calls add with each word of text outside comments and
// literals, read as r says, and whether the word is grouped: on a
// directive's line or within parentheses. It returns the lexer at the
// text's end: why the text is not balanced (pasteWords), or "", the
// branches it is not balanced in, and whether an apostrophe ended a
// number that a reading with separators (wordReading.separators) reads
// on.
//
// Comments and literals are skipped only up to where compilers may lex
// the text apart: a raw string literal the reading does not lex (R"), or
// one whose end compilers find apart, or a number beside a byte that may
// or may not go on it ($, UTF-8, a backslash). From there on nothing is
// skipped (readAnew), and the text is not balanced. A literal is skipped
// only where it closes on its line: clang reads the rest of the line of
// one that does not as part of it, so no comment begins there either, and
// outside directives' lines such a literal leaves the text not balanced
// (its parentheses, read or not, are in doubt).
//
// A definition's parameters are no tokens of what the compiler reads:
// the parameter list is the directive's, and each use in the body is
// replaced by the call's argument. So the words of a function-like
// #define's line that name its parameters are left out (defineParams),
// while comments are skipped and none is in doubt: after a literal left
// unterminated before a /*, a compiler that lexes it otherwise could end
// a comment, and so a definition's line, elsewhere.
func codeWords(text []byte, r wordReading, dirs []directive, add func(w []byte, grouped bool)) *wordLexer {
	lx := wordLexer{text: text, reading: r, add: add, lineStart: true, dirs: dirs}
	lx.skipLexemes = true
	if !r.rawStrings && bytes.Contains(text, []byte(`R"`)) {
		lx.readAnew("a raw string literal may hide the markers of comments and literals")
	}
	for lx.i < len(text) {
		lx.step()
	}
	switch {
	case lx.depth != 0:
		lx.unbalance("a parenthesis the text opens, it does not close")
	case len(lx.floors) != 0:
		lx.unbalance("a conditional block does not end")
	}
	if len(lx.branches) > 0 && (lx.dirs == nil || lx.apart || lx.nextConditional() >= 0) {
		lx.unbalance("a branch not balanced, where the words were read with other conditional blocks than the directives")
	}
	return &lx
}

// nextConditional returns the index in lx.dirs of the conditional
// directive (dIf, dElse, dEndif) after those the lexer has met, or -1.
func (lx *wordLexer) nextConditional() int {
	for i := lx.metDirs; i < len(lx.dirs); i++ {
		if k := lx.dirs[i].kind; k == dIf || k == dElse || k == dEndif {
			return i
		}
	}
	return -1
}

// meetConditional checks a conditional directive the lexer reads at
// text[at] against the next of lx.dirs.
func (lx *wordLexer) meetConditional(at int) {
	i := lx.nextConditional()
	if i < 0 || lx.dirs[i].at != at {
		lx.apart = true
		return
	}
	lx.metDirs = i + 1
}

// wordLexer is codeWords' state as it reads a text.
type wordLexer struct {
	text    []byte
	i       int // the next byte to read
	reading wordReading
	add     func(w []byte, grouped bool)
	// skipLexemes says comments and literals are skipped.
	skipLexemes bool
	lineStart   bool // only blanks and comments since the line began
	directive   bool // the line is a directive's
	depth       int  // parentheses open outside directives' lines
	// floors holds, for each conditional block the text is in, the depth
	// at its #if: each of its branches keeps to it and ends at it; opened
	// the index of the introducer of the directive that opened the
	// block's current branch.
	floors, opened []int
	branches       []int // pasteWords.branches
	// dirs are the text's directives, where known (targetWords); metDirs
	// counts those the lexer has met, and apart says it met a conditional
	// directive other than theirs.
	dirs        []directive
	metDirs     int
	apart       bool
	params      []string // the parameters of the #define of the line
	commentsEnd int      // no comment begins before this index
	doubt       bool     // parameters are no longer left out
	unbalanced  string   // why the text is not balanced, "" while it is
	other       bool     // an apostrophe after a number ended it: separators may read on
}

// unbalance notes why the text is not balanced; the first reason is kept.
func (lx *wordLexer) unbalance(why string) {
	if lx.unbalanced == "" {
		lx.unbalanced = why
	}
}

// unbalanceBranch notes why the branch the lexer is in is not balanced,
// where what is not balanced stays within it; outside every branch, or
// once the lexer reads anew, the text is not balanced.
func (lx *wordLexer) unbalanceBranch(why string) {
	if len(lx.opened) == 0 || lx.doubt {
		lx.unbalance(why)
		return
	}
	if b := lx.opened[len(lx.opened)-1]; !slices.Contains(lx.branches, b) {
		lx.branches = append(lx.branches, b)
	}
}

// inDoubt notes that where comments end is in doubt: no parameter is
// left out from here on, and the text is not balanced.
func (lx *wordLexer) inDoubt(why string) {
	lx.doubt = true
	lx.unbalance(why)
}

// step reads the lexeme at lx.i.
func (lx *wordLexer) step() {
	text, i := lx.text, lx.i
	c := text[i]
	blankOrComment := false
	switch {
	case c == '\n':
		lx.lineStart, lx.directive, lx.params = true, false, nil
		lx.i++
		return
	case c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == 0:
		blankOrComment = true // clang reads a NUL as a blank
		i++
	case lx.lineStart && (c == '#' || (c == '%' && next(text, i) == ':')):
		i = lx.introducer(i)
	case c == '(' && !lx.directive:
		lx.depth++
		i++
	case c == ')' && !lx.directive:
		lx.depth--
		if lx.depth < lx.floor() {
			lx.unbalanceBranch(") closes what the text, or the branch it is in, did not open")
		}
		i++
	case isDigit(c):
		if i > 0 && oddInNumber(text[i-1]) {
			lx.readAnew("a digit after a byte that may begin an identifier") // or a number
		}
		i = lx.number(i)
	case continuesWord(c):
		j := wordEnd(text, i)
		if w := text[i:j]; !isParam(lx.params, w) {
			lx.add(w, lx.directive || lx.depth > 0)
		}
		i = j
	case lx.skipLexemes && c == '"' && lx.reading.rawStrings && rawStringPrefix(text, i):
		i = lx.rawString(i)
	case lx.skipLexemes && (c == '"' || c == '\''):
		i = lx.literal(i)
	case lx.skipLexemes && i >= lx.commentsEnd && c == '/' && next(text, i) == '/':
		i = lineEnd(text, i)
	case lx.skipLexemes && i >= lx.commentsEnd && c == '/' && next(text, i) == '*':
		end := bytes.Index(text[i+2:], []byte("*/"))
		if end < 0 {
			i = len(text) // the rest is the comment's
			break
		}
		i += 2 + end + 2
		blankOrComment = true
	default:
		i++
	}
	lx.lineStart = lx.lineStart && blankOrComment
	lx.i = i
}

// floor is the depth below which no ) may close: the depth at the #if of
// the innermost conditional block the text is in, or 0.
func (lx *wordLexer) floor() int {
	if len(lx.floors) == 0 {
		return 0
	}
	return lx.floors[len(lx.floors)-1]
}

// introducer reads the introducer (# or %:) of a directive at lx.text[i]
// and returns where its line goes on: past a #define's parameter list,
// whose names it notes, or past the introducer.
func (lx *wordLexer) introducer(i int) int {
	lx.directive = true
	at := i
	i++
	if lx.text[i-1] == '%' {
		i++
	}
	name, ok := introducedName(lx.text, i)
	switch string(name) {
	case "if", "ifdef", "ifndef":
		lx.meetConditional(at)
		lx.floors, lx.opened = append(lx.floors, lx.depth), append(lx.opened, at)
	case "elif", "elifdef", "elifndef", "else":
		lx.meetConditional(at)
		lx.branchEnds()
		if len(lx.opened) > 0 {
			lx.opened[len(lx.opened)-1] = at
		}
	case "endif":
		lx.meetConditional(at)
		lx.branchEnds()
		if len(lx.floors) > 0 {
			lx.floors, lx.opened = lx.floors[:len(lx.floors)-1], lx.opened[:len(lx.opened)-1]
		}
	case "include", "include_next", "import", "__include_macros", "embed":
		if lx.depth != 0 {
			lx.unbalanceBranch("an include within parentheses")
		}
	}
	if !ok {
		lx.unbalance("a directive's name in a comment that never closes")
	}
	if !lx.doubt {
		lx.params, i = defineParams(lx.text, i)
	}
	return i
}

// branchEnds checks that a branch of a conditional block, ending at an
// #elif, #else or #endif, ends at the depth its block began at.
func (lx *wordLexer) branchEnds() {
	switch {
	case len(lx.floors) == 0:
		lx.unbalance("a conditional directive without its #if")
	case lx.depth != lx.floor():
		lx.unbalanceBranch("a conditional branch leaves a parenthesis open that it opened")
		lx.depth = lx.floor() // the next branch begins at the floor
	}
}

// introducedName returns the name of the directive whose introducer ends
// just before text[i], past blanks and comments, and false where a
// comment before it never closes.
func introducedName(text []byte, i int) ([]byte, bool) {
	for i < len(text) {
		switch c := text[i]; {
		case c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == 0:
			i++
		case c == '/' && next(text, i) == '*':
			end := bytes.Index(text[i+2:], []byte("*/"))
			if end < 0 {
				return nil, false
			}
			i += 2 + end + 2
		default:
			return text[i:wordEnd(text, i)], true
		}
	}
	return nil, true
}

// number returns the index just past the number that begins at text[i]
// (numberEnd), read as lx.reading says: without separators, or once the
// lexer reads anew, it ends at its first apostrophe, and the reading
// with separators (which reads one there) must be taken too. A number
// that compilers may lex apart (numberEnd's odd) ends at its odd byte,
// and the lexer reads the rest of the text anew.
func (lx *wordLexer) number(i int) int {
	end, odd := numberEnd(lx.text, i)
	if !lx.reading.separators || !lx.skipLexemes {
		if j := bytes.IndexByte(lx.text[i:end], '\''); j >= 0 {
			lx.other = true
			return i + j
		}
	}
	if odd {
		lx.readAnew("a number that compilers may lex apart")
	}
	return end
}

// readAnew makes the lexer skip nothing from here on, for a text whose
// lexemes compilers may read apart from here: every word of every such
// reading is a word it reads (words can begin nowhere within a number,
// which every reading lexes alike up to an apostrophe or an odd byte), so
// a reading it cannot name costs a needless widening at most. The text
// is not balanced.
func (lx *wordLexer) readAnew(why string) {
	if lx.skipLexemes {
		lx.skipLexemes = false
		lx.inDoubt(why)
	}
}

// rawString returns where the raw string literal at text[i] ends. One
// whose end compilers find apart (rawStringEnd) leaves the rest of the
// text unskipped and in doubt.
func (lx *wordLexer) rawString(i int) int {
	end, ok := rawStringEnd(lx.text, i)
	if !ok {
		lx.readAnew("a raw string literal whose end compilers find apart")
		return i + 1
	}
	return end
}

// literal returns where the "..." or '...' at text[i] ends: where it
// closes, or just past its quote where it does not close on its line
// (quotedEnd), which puts the rest of the line out of comments' reach.
func (lx *wordLexer) literal(i int) int {
	text := lx.text
	if text[i] == '\'' && i > 0 && oddInNumber(text[i-1]) {
		lx.readAnew("an apostrophe after a byte that may end a number") // or go on it
		return i + 1
	}
	end, closed := quotedEnd(text, i)
	if !closed {
		lx.commentsEnd = lineEnd(text, i)
		if bytes.Contains(text[i:lx.commentsEnd], []byte("/*")) {
			lx.inDoubt("a literal left unterminated before a /*, where a comment may begin for another lexer")
		}
		if !lx.directive {
			lx.unbalance("a literal that does not close on its line, outside a directive")
		}
	}
	return end
}

// targetAlphabet holds the bytes of the pasteTargets: a word with any
// other is no piece of one.
var targetAlphabet = func() (set [256]bool) {
	for _, t := range pasteTargets {
		for i := range len(t) {
			set[t[i]] = true
		}
	}
	return set
}()

// inTargetAlphabet reports whether every byte of w is in targetAlphabet.
func inTargetAlphabet(w []byte) bool {
	for _, c := range w {
		if !targetAlphabet[c] {
			return false
		}
	}
	return true
}

// maxTargetLen is the length of the longest pasteTarget.
var maxTargetLen = len(slices.MaxFunc(pasteTargets[:], func(a, b string) int { return len(a) - len(b) }))

// isParam reports whether w is one of params.
func isParam(params []string, w []byte) bool {
	for _, p := range params {
		if p == string(w) {
			return true
		}
	}
	return false
}

// defineParams reads the directive whose introducer (# or %:) ends just
// before text[i]: for a function-like #define it returns the parameters'
// names (__VA_ARGS__ for ...) and the index just past the parameter list,
// where the body begins; for any other directive, or one it does not read
// whole (a comment within the list or before the name), no names and i.
// A parameter's name is its macro's alone: the macro's name and the list
// are passed over, and the body's words are judged by the names.
func defineParams(text []byte, i int) (params []string, end int) {
	j := skipSpaces(text, i)
	if !bytes.HasPrefix(text[j:], []byte("define")) {
		return nil, i
	}
	j += len("define")
	if k := skipSpaces(text, j); k > j {
		j = k
	} else {
		return nil, i
	}
	name := wordEnd(text, j)
	if name == j || isDigit(text[j]) || name >= len(text) || text[name] != '(' {
		return nil, i // no name, or an object-like macro: ( is its body's
	}
	for j = name + 1; ; {
		j = skipSpaces(text, j)
		switch {
		case j < len(text) && text[j] == ')' && len(params) == 0:
			return nil, j + 1
		case bytes.HasPrefix(text[j:], []byte("...")):
			j = skipSpaces(text, j+3)
			if j < len(text) && text[j] == ')' {
				return append(params, "__VA_ARGS__"), j + 1
			}
			return nil, i
		}
		w := wordEnd(text, j)
		if w == j || isDigit(text[j]) {
			return nil, i
		}
		params = append(params, string(text[j:w]))
		j = skipSpaces(text, w)
		switch {
		case bytes.HasPrefix(text[j:], []byte("...")): // GNU's named variadic parameter
			j = skipSpaces(text, j+3)
			if j < len(text) && text[j] == ')' {
				return params, j + 1
			}
			return nil, i
		case j < len(text) && text[j] == ',':
			j++
		case j < len(text) && text[j] == ')':
			return params, j + 1
		default:
			return nil, i
		}
	}
}

// skipSpaces returns the index of the first byte at or after j that is no
// space or tab.
func skipSpaces(text []byte, j int) int {
	for j < len(text) && (text[j] == ' ' || text[j] == '\t') {
		j++
	}
	return j
}

// wordEnd returns the index just past the word that begins at text[j]
// (j itself where none does).
func wordEnd(text []byte, j int) int {
	for j < len(text) && continuesWord(text[j]) {
		j++
	}
	return j
}

// quotedEnd returns where the "..." or '...' at text[i] ends, on its
// line, and true; or i+1 and false where it does not end there, so that
// the scan goes on in it. A literal's words are no tokens a paste can
// join, and its comment markers no comment's.
func quotedEnd(text []byte, i int) (int, bool) {
	q := text[i]
	for j := i + 1; j < len(text); j++ {
		switch text[j] {
		case '\\':
			j++
		case q:
			return j + 1, true
		case '\n':
			return i + 1, false
		}
	}
	return i + 1, false
}

// lineEnd returns the index of the newline that ends text[i]'s line.
func lineEnd(text []byte, i int) int {
	if n := bytes.IndexByte(text[i:], '\n'); n >= 0 {
		return i + n
	}
	return len(text)
}
