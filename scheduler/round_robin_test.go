package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/smartpool-go/smartpool/scheduler"
)

const ms = time.Millisecond

// sim runs workers that take tasks back to back, each through its own picker
// of one Scheduler, on a fake clock: the worker that is free first picks
// next, at the time it became free. Workers start staggered within one task
// cost, as a pool's workers do not all finish at the same instant.
type sim struct {
	clock   fakeClock
	pickers []scheduler.Picker
	free    []time.Duration // when each worker finishes its task
	avail   func(now time.Duration) uint64
	cost    func(level int) time.Duration
	started func(now time.Duration, level int) // optional
}

func newSim(t *testing.T, s scheduler.Scheduler, levels, workers int) *sim {
	require.NoError(t, s.Start(levels))
	m := &sim{free: make([]time.Duration, workers)}
	for w := range workers {
		m.pickers = append(m.pickers, s.NewPicker())
		m.free[w] = time.Duration(w) * ms / time.Duration(workers)
	}
	return m
}

// run simulates until no worker is free before until.
func (m *sim) run(t *testing.T, until time.Duration) {
	for {
		w := 0
		for i := range m.free {
			if m.free[i] < m.free[w] {
				w = i
			}
		}
		now := m.free[w]
		if now >= until {
			return
		}
		m.clock.Set(now)
		avail := m.avail(now)
		if avail == 0 {
			m.free[w] += time.Microsecond // idle: look again later
			continue
		}
		l := m.pickers[w].Pick(avail, m.clock.Now)
		require.True(t, isSet(avail, l), "picked %d from %#x at %v", l, avail, now)
		if m.started != nil {
			m.started(now, l)
		}
		m.free[w] += m.cost(l)
	}
}

func always(avail uint64) func(time.Duration) uint64 {
	return func(time.Duration) uint64 { return avail }
}

// TestRoundRobinShares: three always-busy levels with slices 20/40/60 ms
// share 2 s of fake time 1:2:3, whatever the number of workers; with tasks
// of different costs per level, the shares are of time, not of tasks.
func TestRoundRobinShares(t *testing.T) {
	slices := []time.Duration{20 * ms, 40 * ms, 60 * ms}
	costs := map[string][]time.Duration{
		"1ms tasks":          {ms, ms, ms},
		"mixed-length tasks": {300 * time.Microsecond, 1700 * time.Microsecond, 900 * time.Microsecond},
	}
	for name, cost := range costs {
		for _, workers := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/workers=%d", name, workers), func(t *testing.T) {
				m := newSim(t, scheduler.RoundRobin(slices...), 3, workers)
				var busy [3]time.Duration
				m.avail = always(0b111)
				m.cost = func(l int) time.Duration { return cost[l] }
				m.started = func(_ time.Duration, l int) { busy[l] += cost[l] }
				m.run(t, 2*time.Second)
				total := busy[0] + busy[1] + busy[2]
				for l := range 3 {
					share := float64(busy[l]) / float64(total)
					want := float64(l+1) / 6
					require.InDelta(t, 1, share/want, 0.05, "level %d: share %.4f, want %.4f (busy %v)", l, share, want, busy)
				}
			})
		}
	}
}

// TestRoundRobinSkipsEmptyLevels: a lone busy level gets every worker all
// the time; no slice is spent on idle levels.
func TestRoundRobinSkipsEmptyLevels(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			m := newSim(t, scheduler.RoundRobin(20*ms, 40*ms, 60*ms), 3, workers)
			var ran [3]int
			m.avail = always(0b100)
			m.cost = func(int) time.Duration { return ms }
			m.started = func(_ time.Duration, l int) { ran[l]++ }
			m.run(t, 2*time.Second)
			require.Equal(t, [3]int{0, 0, 2000 * workers}, ran)
		})
	}
}

type rrStep struct {
	at    time.Duration
	avail uint64
	want  int
}

func runSteps(t *testing.T, p scheduler.Picker, clock *fakeClock, steps []rrStep) {
	t.Helper()
	for i, s := range steps {
		clock.Set(s.at)
		require.Equal(t, s.want, p.Pick(s.avail, clock.Now), "step %d: at %v, avail %#b", i, s.at, s.avail)
	}
}

// TestRoundRobinTurns walks the slice clock through every rule: an empty
// level hands on at once and the next level gets a fresh full slice; a turn
// that ends on time keeps the rotation's rhythm, the overrun being taken
// from the next turn; an overrun longer than the next slice gives it a fresh
// slice.
func TestRoundRobinTurns(t *testing.T) {
	s := scheduler.RoundRobin(20*ms, 40*ms, 60*ms)
	require.NoError(t, s.Start(3))
	var clock fakeClock
	runSteps(t, s.NewPicker(), &clock, []rrStep{
		{0, 0b111, 0},        // the first pick begins level 0's turn: until 20
		{5 * ms, 0b110, 1},   // level 0 empty: level 1, fresh slice until 45
		{44 * ms, 0b111, 1},  // level 0 has work again, but it is level 1's turn
		{45 * ms, 0b111, 2},  // level 2 until 105
		{104 * ms, 0b011, 0}, // level 2 empty: on to level 0 (cyclic), until 124
		{124 * ms, 0b111, 1}, // on time: level 1 until 164
		{170 * ms, 0b111, 2}, // overran by 6 ms: level 2 keeps the rhythm, until 224
		{223 * ms, 0b111, 2},
		{224 * ms, 0b111, 0},  // until 244
		{300 * ms, 0b111, 1},  // overran by 56 ms, more than level 1's slice: fresh, until 340
		{339 * ms, 0b111, 1},  //
		{340 * ms, 0b010, 1},  // only level 1 has work: its turn again, until 380
		{400 * ms, 0b101, 2},  // level 1 empty: level 2, until 460
		{401 * ms, 0b001, 0},  // level 2 empty: level 0, until 421
		{402 * ms, 0b001, 0},  //
		{421 * ms, 0b001, 0},  // only level 0: its turn again
		{425 * ms, 0b100, 2},  // level 0 empty: level 2 (levels 1 has no work)
		{1000 * ms, 0b110, 1}, // after a long idle spell: next level with work
	})
}

// TestRoundRobinStartResets: Start forgets the clock; the first Pick after it
// begins a new turn for the highest level with work.
func TestRoundRobinStartResets(t *testing.T) {
	s := scheduler.RoundRobin(20*ms, 40*ms, 60*ms)
	require.NoError(t, s.Start(3))
	var clock fakeClock
	p := s.NewPicker()
	runSteps(t, p, &clock, []rrStep{{0, 0b111, 0}, {25 * ms, 0b111, 1}})
	require.NoError(t, s.Start(3))
	runSteps(t, p, &clock, []rrStep{{26 * ms, 0b110, 1}, {27 * ms, 0b111, 1}, {65 * ms, 0b111, 1}, {66 * ms, 0b111, 2}})
}

// TestRoundRobinClockStepsBack: a clock that steps back (a wall clock
// without monotonic reading) ends or restarts the current turn; it never
// stretches it beyond one slice.
func TestRoundRobinClockStepsBack(t *testing.T) {
	s := scheduler.RoundRobin(20*ms, 40*ms, 60*ms)
	require.NoError(t, s.Start(3))
	var clock fakeClock
	runSteps(t, s.NewPicker(), &clock, []rrStep{
		{10 * ms, 0b111, 0},
		{30 * ms, 0b111, 1}, // until 70
		{15 * ms, 0b111, 2}, // 55 ms left of a 40 ms slice: the turn ends; level 2 until 75
		{74 * ms, 0b111, 2},
		{-time.Hour, 0b111, 2}, // before the first pick: level 2 keeps one full slice
		{-time.Hour + 59*ms, 0b111, 2},
		{-time.Hour + 60*ms, 0b111, 0},
	})
}

// TestRoundRobinLongRun checks the clock over 30 years of fake time against
// the reference model, across the epoch moves that keep deadlines in their
// bits.
func TestRoundRobinLongRun(t *testing.T) {
	slices := []time.Duration{20 * ms, 40 * ms, 60 * ms, scheduler.MaxSlice}
	s := scheduler.RoundRobin(slices...)
	require.NoError(t, s.Start(4))
	ref := &rrModel{slices: slices}
	var clock fakeClock
	p := s.NewPicker()
	r := rand.New(rand.NewPCG(3, 4))
	const year = 365 * 24 * time.Hour
	for clock.Elapsed() < 30*year {
		switch r.IntN(3) {
		case 0:
			clock.Advance(time.Duration(r.Int64N(int64(100 * ms))))
		case 1:
			clock.Advance(time.Duration(r.Int64N(int64(30 * 24 * time.Hour))))
		default:
			clock.Advance(time.Duration(r.Int64N(int64(2 * year))))
		}
		avail := r.Uint64()&0b1111 | 1<<r.IntN(3) // level 3's huge slice rarely runs
		if r.IntN(2) == 0 {
			avail &^= 1 << 3
		}
		got := p.Pick(avail, clock.Now)
		require.Equal(t, ref.pick(avail, clock.Now()), got, "avail %#b at %v", avail, clock.Elapsed())
	}
}

// TestRoundRobinBoundedWait: with levels 1 and 2 saturated, a trickle of
// tasks into level 0 (one every 50 ms) is always served within one rotation
// (the sum of the slices, 120 ms) plus one task.
func TestRoundRobinBoundedWait(t *testing.T) {
	const rotation = 120 * ms
	costs := map[string]func(r *rand.Rand) time.Duration{
		"1ms tasks":    func(*rand.Rand) time.Duration { return ms },
		"random tasks": func(r *rand.Rand) time.Duration { return time.Duration(100+r.IntN(2900)) * time.Microsecond },
	}
	for name, cost := range costs {
		for _, workers := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/workers=%d", name, workers), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(workers), 5))
				m := newSim(t, scheduler.RoundRobin(20*ms, 40*ms, 60*ms), 3, workers)
				const trickle = 40
				var arrivals []time.Duration // level-0 tasks not started yet
				next := 0                    // arrivals so far
				var last time.Duration       // cost of the task being started
				m.avail = func(now time.Duration) uint64 {
					for next < trickle && time.Duration(next)*50*ms+7*ms <= now {
						arrivals = append(arrivals, time.Duration(next)*50*ms+7*ms)
						next++
					}
					if len(arrivals) > 0 {
						return 0b111
					}
					return 0b110
				}
				var maxCost, worst time.Duration
				served := 0
				m.cost = func(int) time.Duration { return last }
				m.started = func(now time.Duration, l int) {
					last = cost(r)
					maxCost = max(maxCost, last)
					if l == 0 {
						wait := now - arrivals[0]
						arrivals = arrivals[1:]
						served++
						worst = max(worst, wait)
						require.LessOrEqual(t, wait, rotation+maxCost, "level-0 task %d waited %v", served, wait)
					}
				}
				m.run(t, trickle*50*ms+rotation+10*ms)
				require.Equal(t, trickle, served)
				t.Logf("worst wait %v (bound %v + one task, at most %v)", worst, rotation, maxCost)
			})
		}
	}
}

// TestRoundRobinConcurrent has many goroutines pick through one shared
// RoundRobin while others move a shared fake clock: every pick is a set bit
// (run it with -race).
func TestRoundRobinConcurrent(t *testing.T) {
	s := scheduler.RoundRobin(ms, 2*ms, 3*ms, 500*time.Microsecond, 4*ms)
	require.NoError(t, s.Start(5))
	var clock fakeClock
	var bad atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 6))
			p := s.NewPicker()
			for range 20000 {
				if r.IntN(4) == 0 {
					clock.Advance(time.Duration(r.IntN(300)) * time.Microsecond)
				}
				avail := r.Uint64() & 0b11111
				if avail == 0 {
					continue
				}
				if l := p.Pick(avail, clock.Now); !isSet(avail, l) {
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	require.Zero(t, bad.Load(), "picks of a level without work")
}

// TestRoundRobinWorkersAgree: workers that pick at the same instant with the
// same snapshot all serve the same level, even when their picks race to
// move the clock.
func TestRoundRobinWorkersAgree(t *testing.T) {
	s := scheduler.RoundRobin(20*ms, 40*ms, 60*ms)
	require.NoError(t, s.Start(3))
	var clock fakeClock
	pickers := make([]scheduler.Picker, 8)
	for i := range pickers {
		pickers[i] = s.NewPicker()
	}
	r := rand.New(rand.NewPCG(7, 8))
	seen := map[int]bool{}
	for range 300 {
		clock.Advance(time.Duration(r.IntN(50)) * ms)
		got := make([]int, len(pickers))
		var wg sync.WaitGroup
		for i, p := range pickers {
			wg.Go(func() { got[i] = p.Pick(0b111, clock.Now) })
		}
		wg.Wait()
		for i := range got {
			require.Equal(t, got[0], got[i], "at %v: workers disagree: %v", clock.Elapsed(), got)
		}
		seen[got[0]] = true
	}
	require.Len(t, seen, 3, "every level had turns")
}
