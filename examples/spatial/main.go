// Command spatial shows a channel written outside the library: Spatial
// serves the queued task nearest to a focus point that the program moves, as
// a game loads the world chunks nearest to the player first.
//
// Spatial implements smartpool.Channel by the contract in its documentation:
// one lock; the availability bit set when the queue turns non-empty and
// cleared when it turns empty, with the lock held; Wake after unlocking
// (declared in Attach with Bits.WakesOutsideLock); ErrClosed once the pool
// closes. The program queues the same chunks twice, with the player at two
// places, on a pool of one worker, and prints the order in which they load.
// Run it with
//
//	go run ./examples/spatial
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"

	"github.com/smartpool-go/smartpool"
)

// Point is a position in a 3-D integer grid.
type Point struct{ X, Y, Z int }

func (p Point) String() string { return fmt.Sprintf("(%d,%d,%d)", p.X, p.Y, p.Z) }

// Dist returns the Manhattan distance between p and q.
func (p Point) Dist(q Point) int { return abs(p.X-q.X) + abs(p.Y-q.Y) + abs(p.Z-q.Z) }

func abs(n int) int { return max(n, -n) }

// Focus is a point that moves, such as a player's position. It may be
// shared by several Spatial channels and moved from any goroutine. The zero
// Focus is at the origin.
type Focus struct{ p atomic.Pointer[Point] }

// Move puts the focus at p.
func (f *Focus) Move(p Point) { f.p.Store(&p) }

// At returns where the focus is.
func (f *Focus) At() Point {
	if p := f.p.Load(); p != nil {
		return *p
	}
	return Point{}
}

// Spatial is an unbounded channel whose Poll returns the queued task nearest
// to the focus as it is at that moment, and among equally near tasks the one
// submitted first. It is one queue.
//
// Tasks are kept in submission order and Poll scans them all: O(n) per
// poll, which is fine for the few hundred chunks a game keeps queued. A
// spatial tree (an octree, say) would make it logarithmic.
//
// Create it with NewSpatial. All methods are safe for concurrent use and
// none blocks beyond a short critical section.
//
// A Spatial takes tasks only while a running pool serves it: before New attached
// it, after a New that failed, and from the pool's Close on, its submit
// methods return smartpool.ErrClosed (see smartpool.Channel). Its Queues,
// Attach, Push, Requeue, Poll and Close are called by the pool, not by users.
type Spatial struct {
	focus *Focus // read-only after NewSpatial

	mu      sync.Mutex
	items   []spatialItem  // in submission order; guarded by mu
	closed  bool           // Close was called; guarded by mu
	dropped bool           // Close(true) emptied it: Requeue refuses too; guarded by mu
	bits    smartpool.Bits // set by Attach; guarded by mu
}

type spatialItem struct {
	at   Point
	task smartpool.Task
}

// NewSpatial returns an empty Spatial that serves the tasks nearest to focus
// first.
func NewSpatial(focus *Focus) *Spatial { return &Spatial{focus: focus} }

// Submit queues fn at position at. It returns smartpool.ErrNilTask for a nil
// fn and smartpool.ErrClosed once the pool's Close started.
func (s *Spatial) Submit(at Point, fn func(context.Context)) error {
	if fn == nil {
		return smartpool.ErrNilTask
	}
	return s.SubmitTask(at, smartpool.Func(fn))
}

// SubmitTask is Submit for a Task value.
func (s *Spatial) SubmitTask(at Point, t smartpool.Task) error { return s.push(at, t, false) }

// Push queues t where the focus is now; it is the by-key submit of
// Pool.Submit. The focus may move away before t runs.
//
// Called by the pool; not for users (Pool.Submit is the by-key submit).
func (s *Spatial) Push(t smartpool.Task, o smartpool.Order) error {
	if o.HasDeadline || o.HasPriority {
		return smartpool.Unordered(o)
	}
	return s.push(s.focus.At(), t, false)
}

// Requeue queues a task that yielded and re-enters the pool, as Push does;
// see smartpool.Channel. It is refused only once Close(true) emptied s, or
// while no pool holds s.
//
// Called by the pool; not for users.
func (s *Spatial) Requeue(t smartpool.Task) error { return s.push(s.focus.At(), t, true) }

func (s *Spatial) push(at Point, t smartpool.Task, requeue bool) error {
	if t == nil {
		return smartpool.ErrNilTask
	}
	s.mu.Lock()
	if s.dropped || !s.bits.Attached() || !requeue && (s.closed || s.bits.Closed()) {
		s.mu.Unlock()
		return smartpool.ErrClosed
	}
	s.items = append(s.items, spatialItem{at: at, task: t})
	if len(s.items) == 1 {
		s.bits.Set(0)
	}
	b := s.bits
	s.mu.Unlock()
	b.Wake(1)
	return nil
}

// Poll removes and returns the task nearest to the focus, or nil.
//
// Called by the pool; not for users.
func (s *Spatial) Poll(int) smartpool.Task {
	focus := s.focus.At()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.items) == 0 {
		return nil
	}
	best := 0
	for i, it := range s.items {
		if it.at.Dist(focus) < s.items[best].at.Dist(focus) { // strict: the oldest wins ties
			best = i
		}
	}
	t := s.items[best].task
	s.items = slices.Delete(s.items, best, best+1) // zeroes the freed slot: nothing is retained
	if len(s.items) == 0 {
		s.bits.Clear(0)
	}
	return t
}

// Len returns the number of queued tasks.
func (s *Spatial) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.items)
}

// Queues returns 1: a Spatial is one queue.
//
// Called by the pool; not for users.
func (s *Spatial) Queues() int { return 1 }

// Attach binds s to a pool and publishes whether it holds tasks; it returns
// smartpool.ErrAttached if s already belongs to a pool.
//
// Called by the pool; not for users.
func (s *Spatial) Attach(b smartpool.Bits) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bits.Attached() {
		return smartpool.ErrAttached
	}
	s.bits = b
	if len(s.items) > 0 {
		s.bits.Set(0)
	}
	b.WakesOutsideLock() // push calls Wake after unlocking: an idle worker is woken with its task
	return nil
}

// Close stops admission and, if drop is set, empties s and returns its
// tasks in submission order.
//
// Called by the pool; not for users.
func (s *Spatial) Close(drop bool) []smartpool.Task {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.bits.Closing() {
		return nil // a user's call while a pool serves s, or before one does
	}
	s.closed = true
	s.dropped = s.dropped || drop
	if !drop || len(s.items) == 0 {
		return nil
	}
	out := make([]smartpool.Task, len(s.items))
	for i, it := range s.items {
		out[i] = it.task
	}
	clear(s.items)
	s.items = s.items[:0]
	s.bits.Clear(0)
	return out
}

// world is the pool's behavior: one level, one Spatial channel, one worker
// so that the load order is exactly the channel's order.
type world struct{ chunks *Spatial }

func (w world) Config() smartpool.Config[string] {
	return smartpool.Config[string]{
		Workers: 1,
		Levels:  [][]smartpool.ChannelParams[string]{{{Key: "chunks", CompleteOnClose: true}}},
	}
}

func (w world) Channel(string) smartpool.Channel { return w.chunks }
func (w world) Followup(k string) string         { return k }

func main() {
	player := new(Focus)
	chunks := NewSpatial(player)
	pool, err := smartpool.New[string](world{chunks})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	grid := []Point{
		{4, 0, 4}, {-1, 0, 0}, {0, 0, 3}, {1, 0, 0}, {2, 2, 2}, {-3, 0, 1},
		{0, 1, 0}, {4, 0, 0}, {0, -2, -2}, {5, 1, 5}, {-4, 0, -4}, {3, 0, 3},
	}
	players := []Point{{0, 0, 0}, {4, 0, 4}}
	loaded := make([][]Point, len(players)) // appended by the one worker
	for r, at := range players {
		// Pin the worker with a task that waits, so every chunk is queued
		// and the player has moved before the worker polls again.
		started, release := make(chan struct{}), make(chan struct{})
		var done sync.WaitGroup
		done.Add(1 + len(grid))
		must(chunks.Submit(Point{}, func(context.Context) { close(started); <-release; done.Done() }))
		<-started
		for _, c := range grid {
			must(chunks.Submit(c, func(context.Context) { loaded[r] = append(loaded[r], c); done.Done() }))
		}
		player.Move(at) // after the submits: Poll reads the focus, Submit does not
		close(release)
		done.Wait()
	}

	fmt.Println("The same chunks, submitted in the same order, loaded around two player positions:")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "load\tplayer at %v\tdistance\tplayer at %v\tdistance\t\n", players[0], players[1])
	inOrder := true
	for i := range grid {
		fmt.Fprintf(tw, "%d", i+1)
		for r, at := range players {
			c := loaded[r][i]
			fmt.Fprintf(tw, "\t%v\t%d", c, c.Dist(at))
			if i > 0 { // ordered by distance, then by submission
				prev := loaded[r][i-1]
				d := cmp.Or(cmp.Compare(prev.Dist(at), c.Dist(at)), cmp.Compare(slices.Index(grid, prev), slices.Index(grid, c)))
				inOrder = inOrder && d < 0
			}
		}
		fmt.Fprintln(tw, "\t")
	}
	tw.Flush()
	fmt.Println("nearest first, ties in submission order:", inOrder)

	if _, err := pool.Close(context.Background()); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	err = chunks.Submit(Point{}, func(context.Context) {})
	fmt.Println("submit after Close is ErrClosed:", errors.Is(err, smartpool.ErrClosed))
	_, err = smartpool.New[string](world{chunks})
	fmt.Println("a second pool on the same channel is ErrAttached:", errors.Is(err, smartpool.ErrAttached))
}

func must(err error) {
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
}
