module github.com/kcache/kcache

go 1.26.0

require (
	github.com/dustin/go-humanize v1.1.0 // indirect
	github.com/ebitengine/purego v0.11.3 // indirect
	golang.org/x/sync v0.24.0 // indirect
)
