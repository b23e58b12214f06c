package deps

import (
	"bytes"
	"strings"
)

// tokKind classifies a preprocessing token.
type tokKind uint8

const (
	tIdent tokKind = iota + 1
	tNumber
	tString // string literal, quotes included
	tChar   // character literal
	tPunct
	tOther       // any other byte
	tPlacemarker // an empty argument next to ##; removed after pasting
	// tHeaderName is <name> or "name" lexed as clang lexes an include's
	// operand (tokenizeFileName), or __has_include's in a condition's own
	// text: one token, which # spells as written, escaping nothing.
	tHeaderName
)

// token is one preprocessing token. hide is its hide set: the macros whose
// expansion produced it, which may not expand again in it (C11 6.10.3.4).
type token struct {
	kind  tokKind
	text  string
	space bool // preceded by white space: matters to # and to <...> names
	noexp bool // painted: an identifier that can never expand again
	hide  []string
	// rest is set on the tokens of a directive's own operand, lexed as a
	// file name (tokenizeFileName): the operand's text from just past the
	// token before, which clang lexes again the usual way once it has
	// the first token of the expansion (see relexed).
	rest string
}

// directiveLines returns the preprocessing directives of src, normalized
// by normalize, one logical line each, without the leading '#': comments
// are replaced by a space, as translation phase 3 does. A comment that
// spans lines joins them, as it does for the compiler. at holds, for each
// line, the index in src of its introducer (# or %:).
//
// clang lexes two kinds of directive otherwise where it obeys them than
// where it skips them (in a conditional's false branch, which the scan
// cannot tell): the header name of an include, one token from '<' to the
// first '>' not escaped by a backslash, in which "//" and "/*" begin no
// comment; and the text of #warning and #error, read to the line's end,
// in which nothing begins a comment. Where the two lexings could end the
// directive in different places (a comment that one begins and the other
// does not, run on past the line's end or hiding the rest of it), unsure
// says why, and the file cannot be modelled; elsewhere the header name is
// kept whole, as the compiler opens it.
//
// clang lexes the operand of an include as a file name until the
// expansion gives it a first token (tokenizeFileName): a '<' anywhere in
// it may begin a header name that runs to the next '>'. Where such a name
// would hold what begins a comment or a literal, the two lexings split
// the line differently, and unsure says so.
//
// A NUL byte is a blank to clang (it warns); one inside a literal or a
// header name is kept, and names a file cut short at it, which unsure
// reports.
//
// With cpp, src is lexed as C++: a raw string literal runs to its closing
// delimiter, across lines, and a digit separator in a number begins no
// character literal. A raw string in a directive is not modelled (unsure).
func directiveLines(src []byte, cpp bool) (out []string, at []int, unsure string) {
	var (
		line      strings.Builder
		lineStart = true // only blanks so far on this logical line
		directive bool
		start     int // the index of the directive's introducer
	)
	flush := func() {
		if directive {
			out = append(out, line.String())
			at = append(at, start)
		}
		line.Reset()
		lineStart, directive = true, false
	}
	emit := func(b byte) {
		if directive {
			line.WriteByte(b)
		}
	}
	doubt := func(why string) {
		if directive && unsure == "" {
			unsure = why
		}
	}
	n := len(src)
	for i := 0; i < n; i++ {
		c := src[i]
		switch {
		case c == '\n':
			flush()
		case c == '/' && next(src, i) == '/':
			for i < n && src[i] != '\n' {
				i++
			}
			i--
		case c == '/' && next(src, i) == '*':
			end := bytes.Index(src[i+2:], []byte("*/"))
			stop := len(src) // where the comment's text ends
			if end >= 0 {
				stop = i + 2 + end
			}
			if directive && unsure == "" && rawTextDirective(line.String()) && bytes.IndexByte(src[i:stop], '\n') >= 0 {
				unsure = "a comment begins in the text of #" + directiveWord(line.String()) + " and runs past its line, which clang reads to the line's end where it obeys the directive"
			}
			if end < 0 {
				i = n
			} else {
				i += 2 + end + 1
			}
			emit(' ')
		case c == '<' && directive && (includeOperandNext(line.String()) || hasIncludeOperandNext(line.String())):
			j := angledEnd(src, i)
			if j < 0 {
				emit(c) // no header name: tokens, as the compiler lexes them then
				break
			}
			name := src[i : j+1]
			if angledLexingDiffers(name, src[j+1:]) {
				doubt("the header name " + string(name) + " holds what begins a comment or a literal where clang skips the include")
			}
			if bytes.IndexByte(name, 0) >= 0 {
				doubt(nulInName)
			}
			line.Write(name)
			lineStart = false
			i = j
		case c == '<' && directive && fileNameOperand(line.String()):
			if j := angledEnd(src, i); j >= 0 && fileNameLexingDiffers(src[i:j+1]) {
				doubt("the operand of #" + directiveWord(line.String()) + " holds " + string(src[i:j+1]) + ", which clang lexes as one header name where what comes before it expands to nothing")
			}
			emit(c)
		case cpp && startsNumber(src, i):
			j, odd := numberEnd(src, i)
			if odd && unsure == "" {
				unsure = "a number beside a byte or an apostrophe that compilers lex apart"
			}
			if directive {
				line.Write(src[i:j])
			}
			lineStart = false
			i = j - 1
		case cpp && c == '"' && rawStringPrefix(src, i):
			j, ok := rawStringEnd(src, i)
			if !ok && unsure == "" {
				unsure = "a raw string literal whose delimiter is none, or which never closes: compilers find its end apart"
			}
			doubt("a raw string literal in a directive")
			if directive {
				line.Write(src[i:j])
			}
			lineStart = false
			i = j - 1
		case c == '"' || c == '\'':
			j := literalEnd(src, i)
			if directive {
				line.Write(src[i:j])
			}
			if bytes.IndexByte(src[i:j], 0) >= 0 {
				doubt(nulInName)
			}
			lineStart = false
			i = j - 1
		case c == '#' && lineStart:
			directive, lineStart, start = true, false, i
		case c == '%' && next(src, i) == ':' && lineStart: // the digraph of #
			directive, lineStart, start = true, false, i
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f':
			emit(c)
		case c == 0:
			emit(' ')
		default:
			lineStart = false
			emit(c)
		}
	}
	flush()
	return out, at, unsure
}

// nulInName is why a file is beyond the scanner whose directive holds a
// NUL byte in a literal: clang keeps it there, and a header name holding
// it opens the file named by what comes before it.
const nulInName = "a NUL byte in a literal or header name of a directive"

// fileNameOperand reports whether line, a directive so far, is one whose
// operand clang lexes as a file name: an include's, or a condition's once
// it names __has_include (or __has_embed).
func fileNameOperand(line string) bool {
	if _, ok := includeKinds[directiveWord(line)]; ok {
		return true
	}
	return strings.Contains(line, "__has_include") || strings.Contains(line, "__has_embed")
}

// fileNameLexingDiffers reports whether name, from a '<' to the '>' that
// ends it as a header name, splits its line otherwise when lexed as
// tokens: "//" or "/*" in it begin a comment, and a quote or an
// apostrophe a literal that may run past the '>'. A NUL byte in it would
// be kept in the name.
func fileNameLexingDiffers(name []byte) bool {
	return bytes.Contains(name, []byte("//")) || bytes.Contains(name, []byte("/*")) || bytes.ContainsAny(name, "\"'\x00")
}

// hasCPlusPlusLexemes reports whether text may hold a raw string literal
// or a digit separator, which C++ lexes otherwise than C: a '"' after an
// R, or an apostrophe after an identifier's character or a period.
func hasCPlusPlusLexemes(text []byte) bool {
	for i := bytes.IndexByte(text, '"'); i >= 0; {
		if rawStringPrefix(text, i) {
			return true
		}
		j := bytes.IndexByte(text[i+1:], '"')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	for i := bytes.IndexByte(text, '\''); i >= 0; {
		if i > 0 && (isIdentChar(text[i-1]) || text[i-1] == '.') {
			return true
		}
		j := bytes.IndexByte(text[i+1:], '\'')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

// rawStringPrefix reports whether the '"' at src[i] opens a raw string
// literal: an identifier R, LR, uR, UR or u8R ends just before it.
func rawStringPrefix(src []byte, i int) bool {
	k := i
	for k > 0 && isIdentChar(src[k-1]) {
		k--
	}
	switch string(src[k:i]) {
	case "R", "LR", "uR", "UR", "u8R":
		return true
	}
	return false
}

// rawStringEnd returns the index just past the raw string literal whose
// '"' is src[i] (past ")delimiter\"") and true; or, where it is none that
// compilers read alike, where an ordinary literal would end and false: a
// delimiter that is not one (over 16 bytes, or holding a blank, a
// parenthesis or a backslash; clang then skips to the next '"', on any
// line), or a literal that never closes.
func rawStringEnd(src []byte, i int) (int, bool) {
	open := bytes.IndexByte(src[i+1:min(len(src), i+18)], '(')
	if open < 0 || bytes.ContainsAny(src[i+1:i+1+open], " ()\\\t\v\f\n\r") {
		return literalEnd(src, i), false
	}
	delim := src[i+1 : i+1+open]
	closing := append(append([]byte{')'}, delim...), '"')
	if j := bytes.Index(src[i+2+open:], closing); j >= 0 {
		return i + 2 + open + j + len(closing), true
	}
	return literalEnd(src, i), false
}

// startsNumber reports whether a preprocessing number begins at src[i]:
// a digit that continues no identifier, or a period before a digit.
func startsNumber(src []byte, i int) bool {
	if src[i] == '.' {
		return isDigit(next(src, i))
	}
	return isDigit(src[i]) && (i == 0 || !isIdentChar(src[i-1]))
}

// numberEnd returns the index just past the preprocessing number that
// begins at src[i] (startsNumber), as C++14 lexes it: identifier
// characters, periods, a sign after an e or a p, and digit separators,
// each an apostrophe before a letter, a digit or an underscore. odd says
// compilers may lex it apart: it ends at a byte that may or may not go
// on a number ($, UTF-8, a backslash), or at an apostrophe before one, or
// it has an apostrophe after a p's sign (which C++14 takes in a decimal
// number only).
func numberEnd(src []byte, i int) (end int, odd bool) {
	pSign := false
	for i < len(src) {
		c := src[i]
		switch {
		case continuesWord(c) || c == '.':
			i++
			if (c == 'e' || c == 'E' || c == 'p' || c == 'P') && i < len(src) && (src[i] == '+' || src[i] == '-') {
				pSign = pSign || c == 'p' || c == 'P'
				i++
			}
		case c == '\'' && continuesWord(next(src, i)):
			if pSign {
				return i, true
			}
			i++
		case oddInNumber(c):
			return i, true
		case c == '\'' && oddInNumber(next(src, i)):
			return i, true
		default:
			return i, false
		}
	}
	return i, false
}

// oddInNumber reports whether compilers may read c, in a number or just
// after its apostrophe, as part of the number or not: $, a byte of UTF-8,
// a backslash (of a universal character name).
func oddInNumber(c byte) bool { return c == '$' || c >= 0x80 || c == '\\' }

// includeOperandNext reports whether line, a directive so far, is the name
// of an include-like directive and nothing else: what comes next is its
// operand.
func includeOperandNext(line string) bool {
	switch strings.Trim(line, " \t\r\v\f") {
	case "include", "import", "include_next":
		return true
	}
	return false
}

// hasIncludeOperandNext reports whether line, a directive so far, ends
// with "__has_include(" or "__has_include_next(": clang lexes the
// operand that follows as an include's.
func hasIncludeOperandNext(line string) bool {
	line, ok := strings.CutSuffix(strings.TrimRight(line, " \t\r\v\f"), "(")
	if !ok {
		return false
	}
	line = strings.TrimRight(line, " \t\r\v\f")
	for _, op := range []string{"__has_include", "__has_include_next"} {
		if rest, ok := strings.CutSuffix(line, op); ok && (rest == "" || !isIdentChar(rest[len(rest)-1])) {
			return true
		}
	}
	return false
}

// rawTextDirective reports whether line, a directive so far, is a
// #warning or #error, whose text clang reads raw where it obeys it.
func rawTextDirective(line string) bool {
	switch directiveWord(line) {
	case "warning", "error":
		return true
	}
	return false
}

// directiveWord returns the directive name at the start of line.
func directiveWord(line string) string {
	name, _ := directiveName(line)
	return name
}

// angledEnd returns the index of the '>' that ends the header name
// beginning with the '<' at src[i], as clang lexes it (a backslash escapes
// the next byte), or -1 where the line ends first.
func angledEnd[T string | []byte](src T, i int) int {
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '>':
			return j
		case '\n':
			return -1
		}
	}
	return -1
}

// angledLexingDiffers reports whether the header name name, followed by
// rest, could end the directive elsewhere when lexed as tokens, as clang
// lexes a skipped include: "/*" in it begins a comment that may run on
// past the line; "//", a quote or an apostrophe in it hide the rest of
// the line, which matters where a "/*" follows the name on its line (it
// begins a comment only where the name is one token).
func angledLexingDiffers(name, rest []byte) bool {
	if bytes.Contains(name, []byte("/*")) {
		return true
	}
	if !bytes.Contains(name, []byte("//")) && !bytes.ContainsAny(name, `"'`) {
		return false
	}
	if k := bytes.IndexByte(rest, '\n'); k >= 0 {
		rest = rest[:k]
	}
	return bytes.Contains(rest, []byte("/*"))
}

// Trigraphs says whether the compiler replaces trigraphs (??= for #, ??/
// for a backslash, ...) in translation phase 1, which decides what a
// directive is: "??=include" is an include where they are replaced.
type Trigraphs uint8

const (
	// TrigraphsUnknown means the scan cannot tell. A file whose
	// directives differ with and without replacement is then beyond the
	// scanner, and the source is uncacheable.
	TrigraphsUnknown Trigraphs = iota
	// TrigraphsOn: the compiler replaces trigraphs (clang does for
	// OpenCL C, and for C before C23 in strict modes).
	TrigraphsOn
	// TrigraphsOff: the compiler leaves them (C++17 and later, GNU modes).
	TrigraphsOff
)

// byteOrderMark is UTF-8's, which clang skips at the start of a file.
var byteOrderMark = []byte{0xEF, 0xBB, 0xBF}

// trigraphFor maps the third character of a trigraph to what it stands for.
var trigraphFor = map[byte]byte{'=': '#', '/': '\\', '\'': '^', '(': '[', ')': ']', '!': '|', '<': '{', '>': '}', '-': '~'}

// normalize applies translation phases 1 and 2 as clang does: it drops a
// leading byte order mark, replaces trigraphs if trigraphs is set, makes
// every line end (LF, CRLF or a lone CR) an LF, and removes every line
// splice: a backslash, any blanks, then a line end. Nothing after it,
// literals and comments included, sees the originals.
func normalize(src []byte, trigraphs bool) []byte {
	src = bytes.TrimPrefix(src, byteOrderMark)
	if bytes.IndexByte(src, '\r') < 0 && bytes.IndexByte(src, '\\') < 0 && !(trigraphs && bytes.Contains(src, []byte("??"))) {
		return src
	}
	out := make([]byte, 0, len(src))
	for i := 0; i < len(src); i++ {
		c := src[i]
		if trigraphs && c == '?' && i+2 < len(src) && src[i+1] == '?' {
			if r, ok := trigraphFor[src[i+2]]; ok {
				out = append(out, r)
				i += 2
				continue
			}
		}
		if c == '\r' {
			c = '\n'
			if i+1 < len(src) && src[i+1] == '\n' {
				i++
			}
		}
		out = append(out, c)
	}
	return splice(out)
}

// splice removes every line splice from src, whose line ends are all LF:
// a backslash followed by blanks before the newline splices too (clang
// warns, and splices).
func splice(src []byte) []byte {
	out := src[:0]
	for i := 0; i < len(src); i++ {
		if src[i] == '\\' {
			j := i + 1
			for j < len(src) && (src[j] == ' ' || src[j] == '\t' || src[j] == '\v' || src[j] == '\f') {
				j++
			}
			if j < len(src) && src[j] == '\n' {
				i = j
				continue
			}
		}
		out = append(out, src[i])
	}
	return out
}

// hasTrigraph reports whether src holds a sequence that is a trigraph
// where trigraphs are replaced.
func hasTrigraph(src []byte) bool {
	for i := bytes.Index(src, []byte("??")); i >= 0 && i+2 < len(src); {
		if _, ok := trigraphFor[src[i+2]]; ok {
			return true
		}
		j := bytes.Index(src[i+1:], []byte("??"))
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

func next(src []byte, i int) byte {
	if i+1 < len(src) {
		return src[i+1]
	}
	return 0
}

// literalEnd returns the index just past the string or character literal
// starting at src[i]; an unterminated literal ends at the line's end.
func literalEnd(src []byte, i int) int {
	q := src[i]
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case q:
			return j + 1
		case '\n':
			return j
		}
	}
	return len(src)
}

// punctuators are the multi-byte punctuators, longest first.
var punctuators = []string{
	"%:%:", "...", "<<=", ">>=",
	"->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "*=", "/=", "%=",
	"+=", "-=", "&=", "^=", "|=", "##", "<:", ":>", "<%", "%>", "%:",
}

// tokenize splits one logical line into preprocessing tokens.
func tokenize(s string) []token { return tokenizeMode(s, false) }

// tokenizeCondition is tokenize for an #if or #elif expression, in which
// clang lexes the operand of __has_include written there (not one a macro
// brings) as an include's: <...> is one token, up to the first '>' not
// escaped by a backslash, its bytes as written, so that
// __has_include(<a  b.h>) tests "a  b.h", not the "a b.h" its tokens
// would spell.
func tokenizeCondition(s string) []token { return tokenizeMode(s, true) }

func tokenizeMode(s string, condition bool) []token {
	var out []token
	space := false
	for i := 0; i < len(s); {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == '\n' {
			space = true
			i++
			continue
		}
		if condition && c == '<' && hasIncludeOpen(out) {
			if j := angledEnd(s, i); j >= 0 {
				out = append(out, token{kind: tHeaderName, text: s[i : j+1], space: space})
				space = false
				i = j + 1
				continue
			}
		}
		j, kind := tokenEnd(s, i)
		text := s[i:j]
		if kind == tPunct {
			text = canonicalPunct(text)
		}
		out = append(out, token{kind: kind, text: text, space: space})
		space = false
		i = j
	}
	return out
}

// tokenizeFileName splits an include's operand (the line after the
// directive's name, blanks trimmed) as clang lexes it to find the file's
// name: a '<' begins a header name that runs to the next '>' not escaped
// by a backslash (it is one '<' where none follows on the line), and a
// string literal without a prefix is a header name too, which # spells as
// written. That holds only until the expansion gives a first token
// (Preprocessor::LexHeaderName); rest keeps the text from which the
// expander lexes the operand's unread tokens again (see relexed).
func tokenizeFileName(s string) []token {
	var out []token
	for i := 0; ; {
		j := i
		for j < len(s) && isBlank(s[j]) {
			j++
		}
		if j == len(s) {
			return out
		}
		t, end := fileNameToken(s, j)
		t.space, t.rest = j > i, s[i:]
		out = append(out, t)
		i = end
	}
}

// fileNameToken returns the token at s[i] as clang lexes a file name, and
// its end.
func fileNameToken(s string, i int) (token, int) {
	switch s[i] {
	case '<':
		if j := angledEnd(s, i); j >= 0 {
			return token{kind: tHeaderName, text: s[i : j+1]}, j + 1
		}
		return token{kind: tPunct, text: "<"}, i + 1
	case '"':
		if j := literalEndString(s, i); literalClosed(s[i:j]) {
			return token{kind: tHeaderName, text: s[i:j]}, j
		}
	}
	j, kind := tokenEnd(s, i)
	if kind == tPunct {
		return token{kind: kind, text: canonicalPunct(s[i:j])}, j
	}
	return token{kind: kind, text: s[i:j]}, j
}

// literalClosed reports whether lit, a string or character literal as
// tokenEnd ends it (an encoding prefix included), ends with its closing
// quote: clang lexes an unterminated one as a token of no kind, which #
// spells as written.
func literalClosed(lit string) bool {
	q := strings.IndexAny(lit, `"'`)
	if q < 0 || len(lit)-q < 2 || lit[len(lit)-1] != lit[q] {
		return false
	}
	for j := q + 1; j < len(lit)-1; j++ {
		if lit[j] == '\\' {
			j++
			if j == len(lit)-1 {
				return false // the closing quote is escaped
			}
		}
	}
	return true
}

func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == '\n'
}

// hasIncludeOpen reports whether ts ends with __has_include( (or
// __has_include_next(, __has_embed().
func hasIncludeOpen(ts []token) bool {
	if len(ts) < 2 || ts[len(ts)-1].text != "(" {
		return false
	}
	switch ts[len(ts)-2].text {
	case "__has_include", "__has_include_next", "__has_embed":
		return true
	}
	return false
}

// canonicalPunct maps digraphs to the punctuators they spell.
func canonicalPunct(p string) string {
	switch p {
	case "%:":
		return "#"
	case "%:%:":
		return "##"
	}
	return p
}

// tokenEnd returns the end and kind of the token starting at s[i].
func tokenEnd(s string, i int) (int, tokKind) {
	c := s[i]
	switch {
	case isIdentStart(c):
		j := i + 1
		for j < len(s) && isIdentChar(s[j]) {
			j++
		}
		// An encoding prefix (L, u, U, u8) glued to a literal is part of it.
		if j < len(s) && (s[j] == '"' || s[j] == '\'') && isEncodingPrefix(s[i:j]) {
			return literalEndString(s, j), literalKind(s[j])
		}
		return j, tIdent
	case isDigit(c) || (c == '.' && i+1 < len(s) && isDigit(s[i+1])):
		j := i + 1
		for j < len(s) {
			if (s[j] == '+' || s[j] == '-') && strings.ContainsRune("eEpP", rune(s[j-1])) {
				j++
				continue
			}
			if !isIdentChar(s[j]) && s[j] != '.' {
				break
			}
			j++
		}
		return j, tNumber
	case c == '"' || c == '\'':
		return literalEndString(s, i), literalKind(c)
	}
	for _, p := range punctuators {
		if strings.HasPrefix(s[i:], p) {
			return i + len(p), tPunct
		}
	}
	if strings.IndexByte("[](){}.&*+-~!/%<>^|?:;=,#", c) >= 0 {
		return i + 1, tPunct
	}
	return i + 1, tOther
}

func literalKind(q byte) tokKind {
	if q == '"' {
		return tString
	}
	return tChar
}

func literalEndString(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case q:
			return j + 1
		}
	}
	return len(s)
}

func isEncodingPrefix(p string) bool { return p == "L" || p == "u" || p == "U" || p == "u8" }

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80
}

func isIdentChar(c byte) bool { return isIdentStart(c) || isDigit(c) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
