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
)

// token is one preprocessing token. hide is its hide set: the macros whose
// expansion produced it, which may not expand again in it (C11 6.10.3.4).
type token struct {
	kind  tokKind
	text  string
	space bool // preceded by white space: matters to # and to <...> names
	noexp bool // painted: an identifier that can never expand again
	hide  []string
}

// directiveLines returns the preprocessing directives of src, one logical
// line each, without the leading '#': continuation lines are joined and
// comments replaced by a space, as translation phases 1 to 3 do. A
// comment that spans lines joins them, as it does for the compiler.
func directiveLines(src []byte) []string {
	var (
		out       []string
		line      strings.Builder
		lineStart = true // only blanks so far on this logical line
		directive bool
	)
	flush := func() {
		if directive {
			out = append(out, line.String())
		}
		line.Reset()
		lineStart, directive = true, false
	}
	emit := func(b byte) {
		if directive {
			line.WriteByte(b)
		}
	}
	src = splice(src)
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
			if end < 0 {
				i = n
			} else {
				i += 2 + end + 1
			}
			emit(' ')
		case c == '"' || c == '\'':
			j := literalEnd(src, i)
			if directive {
				line.Write(src[i:j])
			}
			lineStart = false
			i = j - 1
		case c == '#' && lineStart:
			directive, lineStart = true, false
		case c == '%' && next(src, i) == ':' && lineStart: // the digraph of #
			directive, lineStart = true, false
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f':
			emit(c)
		default:
			lineStart = false
			emit(c)
		}
	}
	flush()
	return out
}

// splice removes every backslash-newline (translation phase 2), so that
// nothing after it, literals and comments included, sees them.
func splice(src []byte) []byte {
	if !bytes.Contains(src, []byte("\\\n")) && !bytes.Contains(src, []byte("\\\r\n")) {
		return src
	}
	out := make([]byte, 0, len(src))
	for i := 0; i < len(src); i++ {
		if src[i] == '\\' {
			if i+1 < len(src) && src[i+1] == '\n' {
				i++
				continue
			}
			if i+2 < len(src) && src[i+1] == '\r' && src[i+2] == '\n' {
				i += 2
				continue
			}
		}
		out = append(out, src[i])
	}
	return out
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
func tokenize(s string) []token {
	var out []token
	space := false
	for i := 0; i < len(s); {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == '\n' {
			space = true
			i++
			continue
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
