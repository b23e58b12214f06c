package deps

import (
	"slices"
	"strings"
)

// dirKind is the kind of a directive that matters to dependencies.
type dirKind uint8

const (
	dDefine dirKind = iota + 1
	dUndef
	dInclude     // #include, #import
	dIncludeNext // #include_next: the search goes on past the includer's own place
	dEmbed       // #embed: a file read as data
	dHasInclude  // __has_include in a conditional: existence matters
	// dCondition is an #if or #elif expression kept as text: a macro
	// whose body holds __has_include may be called in it, and then it
	// tests for a file (see macro.hasInclude).
	dCondition
	// dIf, dElse and dEndif give a file's conditional structure
	// (#if/#ifdef/#ifndef; #elif/#else/#elifdef/#elifndef; #endif):
	// whether a definition certainly precedes a point of use depends on
	// the branches both sit in (see macroTable.dominated).
	dIf
	dElse
	dEndif
)

// directive is one parsed directive. Parsed directives are what the file
// cache keeps for each file, so a warm scan never reads or lexes a file.
type directive struct {
	kind dirKind
	// name is the header name of a literal include; the macro name of
	// #define and #undef; dCondition's expression; "else" for #else; the
	// name an #ifndef (or #if !defined) tests.
	name  string
	angle bool // <name> rather than "name"
	// next marks __has_include_next, which tests every place after the
	// includer's own, as #include_next searches.
	next bool
	// operand holds a computed include's tokens, to expand at scan time.
	operand []token
	macro   *macro // #define
	// at is the index of a conditional directive's introducer in the
	// parsed text. needs is the name a dIf's branch is taken only where it is a
	// macro (#ifdef NAME, #if defined(NAME)). unbalanced says the branch
	// the directive opens is not balanced (pasteWords.branches), which
	// matters only where the compiler may read it.
	at         int
	needs      string
	unbalanced bool
}

// parseDirectives returns the directives of src that can add or name a
// dependency, and the conditionals around them, in order, with src lexed
// as C++ where cpp is set.
func parseDirectives(src []byte, cpp bool) (out []directive, unsure string) {
	lines, at, unsure := directiveLines(src, cpp)
	for n, line := range lines {
		if unsure == "" && namesCharacter(line) {
			// clang reads caf\u00e9 as café: one identifier in two
			// spellings, which the scan would take for two names.
			unsure = "a universal character name in a directive"
		}
		name, rest := directiveName(line)
		switch name {
		case "define":
			if m := parseDefine(rest); m != nil {
				out = append(out, directive{kind: dDefine, name: m.name, macro: m})
				// A __has_include in a macro's body tests for a file
				// wherever the macro is expanded in a conditional: a
				// literal operand is keyed here, once and for all, and
				// the macro's calls are followed (macro.hasInclude).
				out = append(out, m.literalHasIncludes()...)
			}
		case "pragma":
			// The comments of the line are gone here: #pragma GCC
			// /* x /* y */ dependency "d.h" is the pragma too.
			if ts := tokenize(rest); unsure == "" && len(ts) > 1 && (ts[0].text == "GCC" || ts[0].text == "clang") && ts[1].text == dependencyWord {
				unsure = dependencyUnsure
			}
		case "undef":
			if ts := tokenize(rest); len(ts) > 0 && ts[0].kind == tIdent {
				out = append(out, directive{kind: dUndef, name: ts[0].text})
			}
		case "include", "import", "include_next", "embed":
			d := includeDirective(includeKinds[name], rest)
			if unsure == "" && slices.ContainsFunc(d.operand, prefixedString) {
				unsure = "a string literal with a u, U or u8 prefix in a computed include: where C11 is not lexed (OpenCL C), clang takes it for a name and a header name, which # spells unescaped"
			}
			// An include without an operand names nothing: the
			// compiler rejects it, so no build comes of it.
			if d.name != "" || len(d.operand) > 0 {
				out = append(out, d)
			}
		case "if", "elif":
			d := directive{kind: dElse, at: at[n]}
			if name == "if" {
				d = directive{kind: dIf, name: notDefinedName(rest), needs: definedName(rest), at: at[n]}
			}
			out = append(out, d)
			tests := hasIncludes(tokenizeCondition(rest))
			if unsure == "" && slices.ContainsFunc(tests, lexedAsFileName) {
				unsure = "a computed operand of __has_include holds a string literal or a '<', which clang may lex as a header name"
			}
			out = append(out, tests...)
			out = append(out, directive{kind: dCondition, name: rest})
		case "ifdef":
			out = append(out, directive{kind: dIf, needs: ifndefName(rest), at: at[n]})
		case "ifndef":
			out = append(out, directive{kind: dIf, name: ifndefName(rest), at: at[n]})
		case "else", "elifdef", "elifndef":
			out = append(out, directive{kind: dElse, name: name, at: at[n]})
		case "endif":
			out = append(out, directive{kind: dEndif, at: at[n]})
		}
	}
	return out, unsure
}

// namesCharacter reports whether line holds, outside its string and
// character literals, a backslash followed by u, U or N: a universal
// character name (\u00e9, \U000000e9, or clang's \N{...}), which clang
// reads in an identifier as the character it names.
func namesCharacter(line string) bool {
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '"' || c == '\'':
			i = literalEndString(line, i) - 1
		case c == '\\' && i+1 < len(line) && strings.IndexByte("uUN", line[i+1]) >= 0:
			return true
		}
	}
	return false
}

// prefixedString reports whether t is a string literal with an encoding
// prefix that C before C11 does not have.
func prefixedString(t token) bool {
	return t.kind == tString && (t.text[0] == 'u' || t.text[0] == 'U')
}

// lexedAsFileName reports whether the __has_include test d, of a
// condition's own text, has a computed operand that clang lexes
// otherwise than the scan: as an include's (tokenizeFileName), until the
// expansion gives its first token. Only a string literal and a '<' lex
// otherwise, and the scan does not model it for a condition, whose
// operand ends at a ')' that a header name may hold.
func lexedAsFileName(d directive) bool {
	return slices.ContainsFunc(d.operand, func(t token) bool {
		return t.kind == tString || strings.HasPrefix(t.text, "<")
	})
}

// ifndefName returns the name #ifndef (or #ifdef) tests, "" if malformed.
func ifndefName(rest string) string {
	if ts := tokenize(rest); len(ts) == 1 && ts[0].kind == tIdent {
		return ts[0].text
	}
	return ""
}

// notDefinedName returns NAME for an #if whose whole expression is
// !defined(NAME) or !defined NAME, the other spelling of #ifndef; "" for
// any other expression.
func notDefinedName(rest string) string {
	ts := tokenize(rest)
	switch {
	case len(ts) == 3 && ts[0].text == "!" && ts[1].text == "defined" && ts[2].kind == tIdent:
		return ts[2].text
	case len(ts) == 5 && ts[0].text == "!" && ts[1].text == "defined" && ts[2].text == "(" && ts[3].kind == tIdent && ts[4].text == ")":
		return ts[3].text
	}
	return ""
}

// definedName returns NAME for an #if whose whole expression is
// defined(NAME) or defined NAME; "" for any other expression.
//
// It reads the line itself rather than its tokens: every #if of every
// file passes through it, and few are so simple.
func definedName(rest string) string {
	const blanks = " \t\r\v\f"
	rest, ok := strings.CutPrefix(strings.Trim(rest, blanks), "defined")
	if !ok || rest == "" || isIdentChar(rest[0]) {
		return ""
	}
	rest = strings.TrimLeft(rest, blanks)
	parens := strings.HasPrefix(rest, "(")
	if parens {
		rest = strings.TrimLeft(rest[1:], blanks)
	}
	n := 0
	for n < len(rest) && isIdentChar(rest[n]) {
		n++
	}
	name, after := rest[:n], strings.TrimLeft(rest[n:], blanks)
	if parens {
		after, ok = strings.CutPrefix(after, ")")
		after = strings.TrimLeft(after, blanks)
	}
	if name == "" || isDigit(name[0]) || !ok || after != "" {
		return ""
	}
	return name
}

var includeKinds = map[string]dirKind{"include": dInclude, "import": dInclude, "include_next": dIncludeNext, "embed": dEmbed}

// directiveName splits a directive line into its name and the rest.
func directiveName(line string) (string, string) {
	line = strings.TrimLeft(line, " \t\r\v\f")
	i := 0
	for i < len(line) && isIdentChar(line[i]) {
		i++
	}
	return line[:i], line[i:]
}

// includeDirective parses an include's operand: a literal "name" or
// <name>, or tokens to expand, lexed as clang lexes a file name.
func includeDirective(kind dirKind, rest string) directive {
	rest = strings.TrimLeft(rest, " \t\r\v\f")
	if name, angle, ok := literalHeaderName(rest); ok {
		return directive{kind: kind, name: name, angle: angle}
	}
	return directive{kind: kind, operand: tokenizeFileName(rest)}
}

// literalHeaderName reads a header name written literally at the start of
// s. It ends, as clang lexes it, at the first closing quote or '>' not
// escaped by a backslash, and holds every byte before it as written:
// #include "a\" " opens the file named a\" followed by a blank.
func literalHeaderName(s string) (name string, angle, ok bool) {
	if len(s) < 2 {
		return "", false, false
	}
	closing := map[byte]byte{'"': '"', '<': '>'}[s[0]]
	if closing == 0 {
		return "", false, false
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case closing:
			return s[1:i], s[0] == '<', true
		}
	}
	return "", false, false
}

// hasIncludes returns a dHasInclude directive for each __has_include (and
// __has_include_next, __has_embed) of a conditional's expression: whether
// the file exists decides which branch is compiled.
func hasIncludes(ts []token) []directive {
	var out []directive
	for i := 0; i < len(ts); i++ {
		switch ts[i].text {
		case "__has_include", "__has_include_next", "__has_embed":
		default:
			continue
		}
		if i+1 >= len(ts) || ts[i+1].text != "(" {
			continue
		}
		depth, j := 0, i+1
		for ; j < len(ts); j++ {
			if ts[j].text == "(" {
				depth++
			} else if ts[j].text == ")" {
				if depth--; depth == 0 {
					break
				}
			}
		}
		operand := ts[i+2 : min(j, len(ts))]
		d := hasIncludeDirective(operand)
		d.next = ts[i].text == "__has_include_next"
		out = append(out, d)
		i = j
	}
	return out
}

// hasIncludeDirective rebuilds a __has_include operand: a <name> arrives
// as separate tokens, a "name" as one string literal.
func hasIncludeDirective(operand []token) directive {
	if name, angle, ok := headerName(operand); ok {
		return directive{kind: dHasInclude, name: name, angle: angle}
	}
	return directive{kind: dHasInclude, operand: operand}
}

// headerName reads an include operand after macro expansion: a string
// literal or a header name, spelled as written (escapes and all), or the
// spellings of the tokens between < and >, each after a space where it
// has one, the '>' too (Preprocessor::LexHeaderName).
func headerName(ts []token) (name string, angle, ok bool) {
	if len(ts) == 0 {
		return "", false, false
	}
	switch t := ts[0]; {
	case t.kind == tString && t.text[0] == '"' && literalClosed(t.text):
		return t.text[1 : len(t.text)-1], false, true
	case t.kind == tHeaderName:
		return t.text[1 : len(t.text)-1], t.text[0] == '<', len(t.text) > 2
	case t.text != "<":
		return "", false, false
	}
	var b strings.Builder
	for _, t := range ts[1:] {
		if t.space {
			b.WriteByte(' ')
		}
		if t.text == ">" {
			return b.String(), true, b.Len() > 0
		}
		b.WriteString(t.text)
	}
	return "", false, false
}
