package gid

import "runtime"

// fromStack returns the calling goroutine's number, from the first line of
// runtime.Stack ("goroutine 42 [..."): the portable, slower identifier.
func fromStack() uintptr {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = len("goroutine ")
	var id uintptr
	for i := prefix; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		id = id*10 + uintptr(b[i]-'0')
	}
	return id
}
