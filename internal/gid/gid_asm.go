//go:build (amd64 || arm64) && gc

package gid

// Current returns the calling goroutine's identifier (see the package doc).
func Current() uintptr
