module github.com/kcache/kcache/bench

go 1.26

replace github.com/kcache/kcache => ../

require github.com/maypok86/otter/v2 v2.4.0 // indirect
