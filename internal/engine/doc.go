// Package engine is the mechanism of a smartpool pool, without the user's
// key type: the workers and their parking, run buffers, spare carriers,
// admission and credits, cancellation, the yield hand-off, help-while-you-
// wait, caps, pauses, run-time reshaping, timers, timing and the stall
// watchdog. The root package wraps it with Pool[K] and OwnedPool[K] (keys,
// the index map, Stats, logging); package source gives channels their face
// of it (source.Bits, one inlined forward per method). It imports neither:
// channels reach it through its queue interface, whose method set every
// source.Source has, and source registers the two hooks that make a
// source.Bits (Attach, and the channel test harness).
//
// # Map
//
// Each protocol is written once, as an essay at the top of the file that
// implements it (runtime/proc.go's manner), and checked by a spin model in
// internal/model where one is named:
//
//	protocol                                  file            spin model
//	worker loop: search, poll, run            worker.go       park, close
//	sleep and wake-up, waking token, bursts   park.go         park, close
//	workers created on first need, retired    workers.go      park, close
//	run buffers: batch polls, steals          buffer.go       buffer
//	spare carriers for yielded workers        carriers.go     close
//	Yield: slot hand-off, re-entry, Handoff   yield.go        close, reshape
//	Close: stop, drain or drop, the report    engine.go       close
//	in-flight limit (Config.Limit)            admit.go
//	units of channels that do not Admit       credit.go
//	WithContext and Handle cancellation       cancel.go
//	which goroutine is a task's               identity.go
//	spawning from a task never waits for it   help.go         spawn
//	tasks held outside queue and workers      hold.go         reshape
//	by-key calls pinned against removals      keypin.go       reshape
//	MaxRunning and MaxInFlight caps           limit.go        pause
//	Pause, Resume, SetCap                     pause.go        pause
//	start rates: token buckets, the rate timer rate.go         pause (RATE)
//	AddChannel and RemoveChannel              reshape.go      reshape
//	a yielded task keeps its key              order.go
//	tasks a channel runs on its caller        run_here.go
//	a user scheduler that panics              schedguard.go
//	After, At and Every                       schedule.go
//	queue waits and run times                 timing.go, histogram.go
//	the stall watchdog                        stall.go
//	Stats' counters, without keys             census.go
//	a channel's Bits; the attach hook         bits.go, attach.go
//	the channel test harness's engine         standalone.go
//	drops by cause (Stats' DroppedBy)         engine.go (DropCause)
//	a task's observer (Config.Observe)        observe.go
//	failures no Wait read, logged once        unread.go
//	submit options and their errors           options.go, errors.go
//
// To change how a worker parks, read park.go, then worker.go (the loop that
// parks), workers.go (a worker created idle), carriers.go and yield.go (a
// yield hands its worker over), and park.pml.
//
// # Wake-up verbs
//
// One verb per act, in park.go unless named:
//
//	wake           start one idle worker, unless one is waking already (the token)
//	wakeFrom       wake, for a queue just given work; may hand the worker a task
//	wakeAny        wake whichever idle worker, for a parker that saw work late
//	wakeAll        wake every parked worker: Close, SetWorkers lowering the count
//	rouseIdle      pop an idle worker (or create one) and rouse it
//	worker.rouse   send one popped worker its wake-up (token, task)
//	awake          count the workers not on the idle stack: a number, not an act
//	hasWork        whether a task waits for a worker: the summary or a run buffer
//
// # Close and the endings off the workers
//
// Close waits for live, the count of worker goroutines plus one share for
// whatever else must end before the report (engine.go, share). Every task
// ends exactly once, and every ending produced off the pool's own
// goroutines is covered by a share of live, or by a count Close's drain
// waits for, taken before the task left its queue: see startClose.
package engine
