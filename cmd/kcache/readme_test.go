package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// pendingDocs are pages the README links to that other work adds; the
// check skips them until they exist.
var pendingDocs = map[string]bool{"docs/serve.md": true}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	notSlug   = regexp.MustCompile(`[^a-z0-9 _-]`)
	fenced    = regexp.MustCompile("(?ms)^```.*?^```$")
)

// TestDocsLinksResolve: every relative link of the README and docs/ names a
// file of the repository, and every #anchor a heading of its page, as
// GitHub names them. A moved section must not leave a reader at a dead end.
func TestDocsLinksResolve(t *testing.T) {
	pages, _ := filepath.Glob("../../docs/*.md")
	pages = append(pages, "../../README.md")
	for _, page := range pages {
		text := fenced.ReplaceAllString(readDoc(t, page), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target, anchor, _ := strings.Cut(m[1], "#")
			if strings.Contains(target, "://") {
				continue
			}
			file := page
			if target != "" {
				file = filepath.Join(filepath.Dir(page), target)
			}
			if rel, _ := filepath.Rel("../..", file); pendingDocs[rel] {
				continue
			}
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s: link %s: %v", page, m[1], err)
				continue
			}
			if anchor != "" && !hasAnchor(fenced.ReplaceAllString(readDoc(t, file), ""), anchor) {
				t.Errorf("%s: link %s: no heading makes anchor #%s", page, m[1], anchor)
			}
		}
	}
}

// hasAnchor reports whether a heading of the Markdown text gets the
// anchor GitHub gives it: lower case, punctuation dropped, blanks to
// hyphens.
func hasAnchor(text, anchor string) bool {
	for _, h := range mdHeading.FindAllStringSubmatch(text, -1) {
		if strings.ReplaceAll(notSlug.ReplaceAllString(strings.ToLower(h[1]), ""), " ", "-") == anchor {
			return true
		}
	}
	return false
}

// TestREADMEQuotesExampleOpen: the README's library snippet is the tested
// ExampleOpen program, word for word: its kernel and its run function.
func TestREADMEQuotesExampleOpen(t *testing.T) {
	readme, example := readDoc(t, "../../README.md"), readDoc(t, "../../tiers/example_test.go")
	for _, part := range []*regexp.Regexp{
		regexp.MustCompile("(?m)^const iotaCL = .*$"),
		regexp.MustCompile(`(?ms)^func run\(.*?^}$`),
	} {
		want := part.FindString(example)
		if want == "" || !strings.Contains(readme, want) {
			t.Errorf("README.md does not quote tiers/example_test.go's %q as it is", part)
		}
	}
}

// TestDocsNameEveryFlag: the synopsis in the README and in docs/cli.md
// names every flag each command defines, and no flag it does not.
func TestDocsNameEveryFlag(t *testing.T) {
	longFlag := regexp.MustCompile(`--([a-z][a-z-]*)`)
	for _, page := range []string{"../../README.md", "../../docs/cli.md"} {
		text := readDoc(t, page)
		for _, c := range newRootCmd().Commands() {
			if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
				continue
			}
			synopsis := ""
			for _, line := range regexp.MustCompile(`(?m)^kcache `+c.Name()+`( .*)?$`).FindAllString(text, -1) {
				// The synopsis, not an example: the line that shows options.
				if synopsis == "" || strings.Contains(line, "[") && !strings.Contains(synopsis, "[") {
					synopsis = line
				}
			}
			if synopsis == "" {
				t.Errorf("%s: no synopsis line for kcache %s", page, c.Name())
				continue
			}
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if f.Name != "help" && !strings.Contains(synopsis, "--"+f.Name) &&
					(f.Shorthand == "" || !strings.Contains(synopsis, "-"+f.Shorthand+" ")) {
					t.Errorf("%s: kcache %s's synopsis lacks --%s", page, c.Name(), f.Name)
				}
			})
			for _, m := range longFlag.FindAllStringSubmatch(synopsis, -1) {
				if c.Flags().Lookup(m[1]) == nil && c.Name() != "version" {
					t.Errorf("%s: kcache %s's synopsis names --%s, which it does not define", page, c.Name(), m[1])
				}
			}
		}
	}
}

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
