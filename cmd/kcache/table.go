package main

import (
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// defaultWidth is the width assumed for a terminal that does not say.
const defaultWidth = 80

// terminalWidth returns the width of the terminal w writes to: its window
// size, else $COLUMNS, else defaultWidth.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return defaultWidth
}

// tableGap is the space between a table's columns.
const tableGap = 2

// minCell is the narrowest fitTable cuts a column to: enough to recognise
// a device or an option.
const minCell = 8

// fitTable cuts the cells of the flexible columns of rows, the widest
// column first, until a line fits in width or each is down to minCell
// runes. A cut cell ends in "…".
func fitTable(rows [][]string, flex []int, width int) {
	if len(rows) == 0 {
		return
	}
	if width <= 0 {
		width = defaultWidth
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	total := tableGap * (len(widths) - 1)
	for _, w := range widths {
		total += w
	}
	for total > width {
		widest := -1
		for _, i := range flex {
			if widths[i] > minCell && (widest < 0 || widths[i] > widths[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			break
		}
		widths[widest]--
		total--
	}
	for _, r := range rows {
		for _, i := range flex {
			r[i] = cut(r[i], widths[i])
		}
	}
}

// cut shortens s to n runes, the last being "…".
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// writeTable writes rows as aligned columns, the way tabwriter does, with
// no space after the last column.
func writeTable(w io.Writer, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, tableGap, ' ', 0)
	for _, r := range rows {
		if _, err := io.WriteString(tw, strings.Join(r, "\t")+"\n"); err != nil {
			return err
		}
	}
	return tw.Flush()
}
