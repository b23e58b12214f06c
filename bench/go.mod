module github.com/kcache/kcache/bench

go 1.26.0

replace github.com/kcache/kcache => ../

require (
	github.com/kcache/kcache v0.0.0-00010101000000-000000000000
	github.com/maypok86/otter/v2 v2.4.0
)
