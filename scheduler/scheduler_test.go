package scheduler_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/smartpool-go/smartpool/scheduler"
)

func durations(n int, d time.Duration) []time.Duration {
	s := make([]time.Duration, n)
	for i := range s {
		s[i] = d
	}
	return s
}

func ones(n int) []int {
	w := make([]int, n)
	for i := range w {
		w[i] = 1
	}
	return w
}

func TestStartValidation(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		s       scheduler.Scheduler
		levels  int
		wantErr string // "" means Start must succeed
	}{
		{"HighestFirst/1 level", scheduler.HighestFirst(), 1, ""},
		{"HighestFirst/64 levels", scheduler.HighestFirst(), 64, ""},
		{"HighestFirst/0 levels", scheduler.HighestFirst(), 0, "0 levels"},
		{"HighestFirst/negative levels", scheduler.HighestFirst(), -1, "-1 levels"},
		{"HighestFirst/65 levels", scheduler.HighestFirst(), 65, "65 levels"},

		{"RoundRobin/ok", scheduler.RoundRobin(20*ms, 40*ms, 60*ms), 3, ""},
		{"RoundRobin/64 levels", scheduler.RoundRobin(durations(64, ms)...), 64, ""},
		{"RoundRobin/MaxSlice", scheduler.RoundRobin(scheduler.MaxSlice), 1, ""},
		{"RoundRobin/too few slices", scheduler.RoundRobin(20*ms, 40*ms), 3, "2 slices for 3 levels"},
		{"RoundRobin/too many slices", scheduler.RoundRobin(ms, ms, ms), 2, "3 slices for 2 levels"},
		{"RoundRobin/zero slice", scheduler.RoundRobin(ms, 0, ms), 3, "slice 1 is 0s"},
		{"RoundRobin/negative slice", scheduler.RoundRobin(ms, ms, -5*ms), 3, "slice 2 is -5ms"},
		{"RoundRobin/slice over MaxSlice", scheduler.RoundRobin(scheduler.MaxSlice + 1), 1, "slice 0 is"},
		{"RoundRobin/0 levels", scheduler.RoundRobin(), 0, "0 levels"},
		{"RoundRobin/65 levels", scheduler.RoundRobin(durations(65, ms)...), 65, "65 levels"},

		{"Weighted/ok", scheduler.Weighted(1, 2, 3), 3, ""},
		{"Weighted/64 levels at MaxWeight", scheduler.Weighted(make64(scheduler.MaxWeight)...), 64, ""},
		{"Weighted/too few weights", scheduler.Weighted(1, 2), 3, "2 weights for 3 levels"},
		{"Weighted/too many weights", scheduler.Weighted(1, 2, 3), 1, "3 weights for 1 levels"},
		{"Weighted/zero weight", scheduler.Weighted(1, 0, 3), 3, "weight 1 is 0"},
		{"Weighted/negative weight", scheduler.Weighted(1, 2, -3), 3, "weight 2 is -3"},
		{"Weighted/weight over MaxWeight", scheduler.Weighted(scheduler.MaxWeight + 1), 1, "weight 0 is 1048577"},
		{"Weighted/0 levels", scheduler.Weighted(), 0, "0 levels"},
		{"Weighted/65 levels", scheduler.Weighted(ones(65)...), 65, "65 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.s.Start(tt.levels)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, scheduler.ErrBadPolicy)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func make64(w int) []int {
	ws := make([]int, 64)
	for i := range ws {
		ws[i] = w
	}
	return ws
}

// policies returns the three shipped policies, started for the given number
// of levels, with slices and weights that differ from level to level.
func policies(t testing.TB, levels int) map[string]scheduler.Scheduler {
	slices := make([]time.Duration, levels)
	weights := make([]int, levels)
	for i := range levels {
		slices[i] = time.Duration(i%7+1) * time.Millisecond
		weights[i] = i%5 + 1
	}
	ps := map[string]scheduler.Scheduler{
		"HighestFirst": scheduler.HighestFirst(),
		"RoundRobin":   scheduler.RoundRobin(slices...),
		"Weighted":     scheduler.Weighted(weights...),
	}
	for name, p := range ps {
		require.NoError(t, p.Start(levels), name)
	}
	return ps
}

// TestPickAgainstReference drives every policy with random snapshots and
// compares each pick with a brute-force reference: the lowest set bit for
// HighestFirst, plain models for RoundRobin and Weighted. Every pick must be
// a level whose bit is set.
func TestPickAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		levels := 1 + r.IntN(64)
		ps := policies(t, levels)
		var clock fakeClock
		hf := ps["HighestFirst"].NewPicker()
		rr := ps["RoundRobin"].NewPicker()
		wp := ps["Weighted"].NewPicker()
		rrRef := &rrModel{slices: make([]time.Duration, levels)}
		wRef := &swrrModel{w: make([]int, levels), cur: make([]int, levels)}
		for i := range levels {
			rrRef.slices[i] = time.Duration(i%7+1) * time.Millisecond
			wRef.w[i] = i%5 + 1
		}
		for range 500 {
			clock.Advance(time.Duration(r.IntN(3000)) * time.Microsecond)
			avail := r.Uint64() & mask(levels)
			if r.IntN(4) == 0 {
				avail &= r.Uint64() // sparser snapshots: fewer busy levels
			}
			if avail == 0 {
				continue
			}
			got := hf.Pick(avail, clock.Now)
			require.Equal(t, lowestSetBit(avail), got, "HighestFirst, avail %#x", avail)

			got = rr.Pick(avail, clock.Now)
			require.True(t, isSet(avail, got), "RoundRobin picked %d, avail %#x", got, avail)
			require.Equal(t, rrRef.pick(avail, clock.Now()), got, "RoundRobin, avail %#x at %v", avail, clock.Elapsed())

			got = wp.Pick(avail, clock.Now)
			require.True(t, isSet(avail, got), "Weighted picked %d, avail %#x", got, avail)
			require.Equal(t, wRef.pick(avail), got, "Weighted, avail %#x", avail)
		}
	}
}

// TestPickOutsideLevels: a snapshot with bits beyond the pool's levels is
// outside the contract, but a policy still returns a set bit.
func TestPickOutsideLevels(t *testing.T) {
	var clock fakeClock
	for name, s := range policies(t, 3) {
		p := s.NewPicker()
		for _, avail := range []uint64{1 << 3, 1 << 63, 1<<63 | 1<<5, 1<<63 | 1<<1} {
			require.True(t, isSet(avail, p.Pick(avail, clock.Now)), "%s, avail %#x", name, avail)
		}
	}
}

// FuzzPick feeds each policy a sequence of snapshots and clock steps: every
// pick must be a set bit, HighestFirst the lowest one, and RoundRobin and
// Weighted must agree with their reference models. Each record of steps is 9
// bytes: the snapshot, then a byte whose low 6 bits are the clock step in
// quarter milliseconds and whose top bit keeps bits beyond the pool's levels.
func FuzzPick(f *testing.F) {
	rec := func(avail uint64, b byte) []byte {
		return append(binary.LittleEndian.AppendUint64(nil, avail), b)
	}
	f.Add(uint8(2), append(rec(0b111, 4), rec(0b110, 80)...))
	f.Add(uint8(63), append(rec(^uint64(0), 63), rec(1<<63, 1)...))
	f.Add(uint8(0), rec(1, 0))
	f.Add(uint8(7), append(append(rec(0b1000_0001, 0x80|3), rec(0b0100_0000, 40)...), rec(1<<40, 0x80)...))
	f.Fuzz(func(t *testing.T, levelsByte uint8, steps []byte) {
		levels := int(levelsByte)%scheduler.MaxLevels + 1
		ps := policies(t, levels)
		hf := ps["HighestFirst"].NewPicker()
		rr := []scheduler.Picker{ps["RoundRobin"].NewPicker(), ps["RoundRobin"].NewPicker()}
		wp := ps["Weighted"].NewPicker()
		rrRef := &rrModel{slices: make([]time.Duration, levels)}
		wRef := &swrrModel{w: make([]int, levels), cur: make([]int, levels)}
		for i := range levels {
			rrRef.slices[i] = time.Duration(i%7+1) * time.Millisecond
			wRef.w[i] = i%5 + 1
		}
		var clock fakeClock
		for i := 0; len(steps) >= 9; i++ {
			avail, b := binary.LittleEndian.Uint64(steps), steps[8]
			steps = steps[9:]
			clock.Advance(time.Duration(b&63) * 250 * time.Microsecond)
			if b&0x80 == 0 {
				avail &= mask(levels)
			}
			if avail == 0 {
				continue
			}
			if got, want := hf.Pick(avail, clock.Now), lowestSetBit(avail); got != want {
				t.Fatalf("HighestFirst(%#x) = %d, want %d", avail, got, want)
			}
			got := rr[i%2].Pick(avail, clock.Now)
			if !isSet(avail, got) {
				t.Fatalf("RoundRobin(%#x) = %d: bit not set", avail, got)
			}
			if want := rrRef.pick(avail, clock.Now()); got != want {
				t.Fatalf("RoundRobin(%#x) at %v = %d, reference %d", avail, clock.Elapsed(), got, want)
			}
			got = wp.Pick(avail, clock.Now)
			if !isSet(avail, got) {
				t.Fatalf("Weighted(%#x) = %d: bit not set", avail, got)
			}
			if want := wRef.pick(avail & mask(levels)); avail&mask(levels) != 0 && got != want {
				t.Fatalf("Weighted(%#x) = %d, reference %d", avail, got, want)
			}
		}
	})
}

func BenchmarkPick(b *testing.B) {
	const avail = 0b111
	for _, name := range []string{"HighestFirst", "RoundRobin", "Weighted"} {
		b.Run(name, func(b *testing.B) {
			p := policiesFor(b, name).NewPicker()
			now := time.Now
			b.ReportAllocs()
			for b.Loop() {
				p.Pick(avail, now)
			}
		})
	}
	// Without the cost of time.Now, on a clock that moves 1 us per pick:
	// the turn changes every 20 to 60 picks.
	b.Run("RoundRobin/fake-clock", func(b *testing.B) {
		p := policiesFor(b, "RoundRobin").NewPicker()
		t := epoch
		now := func() time.Time { t = t.Add(time.Microsecond); return t }
		b.ReportAllocs()
		for b.Loop() {
			p.Pick(avail, now)
		}
	})
}

// BenchmarkPickParallel has every goroutine pick with its own picker, as the
// pool's workers do; RoundRobin's pickers share one slice clock.
func BenchmarkPickParallel(b *testing.B) {
	const avail = 0b111
	for _, name := range []string{"HighestFirst", "RoundRobin", "Weighted"} {
		b.Run(name, func(b *testing.B) {
			s := policiesFor(b, name)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				p := s.NewPicker()
				now := time.Now
				for pb.Next() {
					p.Pick(avail, now)
				}
			})
		})
	}
}

func policiesFor(b *testing.B, name string) scheduler.Scheduler {
	s := map[string]scheduler.Scheduler{
		"HighestFirst": scheduler.HighestFirst(),
		"RoundRobin":   scheduler.RoundRobin(20*time.Microsecond, 40*time.Microsecond, 60*time.Microsecond),
		"Weighted":     scheduler.Weighted(1, 2, 3),
	}[name]
	require.NoError(b, s.Start(3))
	return s
}
