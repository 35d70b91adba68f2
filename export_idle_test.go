package smartpool

// IdleListed reports whether some worker of p is on the idle stack, where a
// submit's wake-up finds it (and hands it the task).
func IdleListed[K comparable](p *Pool[K]) bool { return !p.e.Idle.Empty() }
