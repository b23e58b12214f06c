package deps

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// searchOrder returns the directories every include searches (after a
// quoted include's own), in the compiler's order, settling it on the
// scan's first search.
//
// clang removes duplicate directories from its search path, comparing
// them by identity (device and inode, so A, A/. and a link to A are one)
// rather than by name (InitHeaderSearch's RemoveDuplicates, clang-15).
// Mostly it drops the later copy, which the scan keeps: a directory
// searched a second time shows nothing it did not show the first, so the
// copy only keys more places. But a user directory (-I) that is also a
// system one (-isystem, -idirafter, a built-in directory) goes from its
// place, and the system copy stays at its own, later one, as in GCC:
// -IA -IB -isystem A searches B before A. The quoted directories
// (-iquote) are compared among themselves only, so none of them moves.
//
// Which directories are one is known by stat, so the order depends on
// what each stat answered: they are made through sc.stat, which the
// scan's memo and record keep, and a link retargeted later (making two
// directories one, or one two) changes what they observe.
func (sc *scan) searchOrder() []string {
	if !sc.inv.settled {
		sc.inv.searched, sc.inv.settled = sc.withoutShadowedUserDirs(), true
		if sc.inv.searchUnsure != "" {
			sc.refuse(sc.inv.searchUnsure)
		}
	}
	return sc.inv.searched
}

// withoutShadowedUserDirs returns the angled directories less each user
// directory that is also a system directory. Where there is no system
// directory (PoCL's own options name none) no stat is needed.
func (sc *scan) withoutShadowedUserDirs() []string {
	dirs := sc.inv.angledDirs
	user, system := dirs[:sc.inv.firstSystem], dirs[sc.inv.firstSystem:]
	if len(user) == 0 || len(system) == 0 {
		return dirs
	}
	systemIDs := map[dirID]bool{}
	for _, d := range system {
		if id, ok := sc.searchDirID(d); ok {
			systemIDs[id] = true
		}
	}
	out := make([]string, 0, len(dirs))
	for _, d := range user {
		if id, ok := sc.searchDirID(d); ok && systemIDs[id] {
			continue
		}
		out = append(out, d)
	}
	return append(out, system...)
}

// dirID is a directory's identity as clang's FileManager compares
// directories: its device and inode.
type dirID struct{ dev, ino uint64 }

// searchDirID returns the identity of search directory d, and false where
// it has none to compare: clang leaves a directory that is not there out
// of its search path (and reads one that is a file as a header map, which
// searchDirsAreDirs refuses), so it duplicates nothing. Where a directory
// is there but its identity cannot be known, the order is not known, and
// the source is refused: keeping the user directory at its place would
// take its file where clang may take a later one.
func (sc *scan) searchDirID(d string) (dirID, bool) {
	fi, err := sc.stat(d)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return dirID{}, false
	case err != nil:
		sc.refuse(fmt.Sprintf("search directory %s cannot be examined, so which directories the compiler takes for one is not known: %v", d, err))
		return dirID{}, false
	case !fi.IsDir():
		return dirID{}, false
	}
	id := identityOf(fi)
	if id.inode == 0 {
		sc.refuse(fmt.Sprintf("search directory %s has no inode to tell whether the compiler takes it for another", d))
		return dirID{}, false
	}
	return dirID{id.dev, id.inode}, true
}
