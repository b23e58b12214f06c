// Package bench compares kcache's tiers with their peers. It is a module of
// its own so that the peers (otter, ...) never become dependencies of the
// library. Everything is in its _test.go files; see RESULTS.md.
package bench
