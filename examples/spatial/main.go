// Command spatial shows a channel written outside the library: Spatial
// serves the queued task nearest to a focus point that the program moves, as
// a game loads the world chunks nearest to the player first.
//
// Spatial is a smartpool.Channel as any channel is: it embeds the
// source.Plug that NewPlug made from its source.Source, an inner
// value that implements the contract in Source's documentation: one lock; the availability bit set when the queue turns non-empty and
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
	"github.com/smartpool-go/smartpool/source"
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

// Spatial is an unbounded channel that serves the queued task nearest to
// the focus as it is when a worker takes one, and among equally near tasks
// the one submitted first. It is one queue.
//
// Tasks are kept in submission order and each poll scans them all: O(n) per
// poll, which is fine for the few hundred chunks a game keeps queued. A
// spatial tree (an octree, say) would make it logarithmic.
//
// Create it with NewSpatial: smartpool.New refuses a zero Spatial. All
// methods are safe for concurrent use and none blocks beyond a short
// critical section, unless a submit's options say so.
//
// A Spatial takes tasks only while a running pool serves it: before New
// attached it, after a New that failed, and from the pool's Close on, its
// submit methods return smartpool.ErrClosed.
type Spatial struct {
	source.Plug // made by NewSpatial from src: the pool talks to src
	src         spatialSource
}

// NewSpatial returns an empty Spatial that serves the tasks nearest to focus
// first.
func NewSpatial(focus *Focus) *Spatial {
	s := &Spatial{src: spatialSource{focus: focus}}
	s.Plug = source.NewPlug(&s.src)
	return s
}

// Submit queues fn at position at; it is SubmitTask for a function.
func (s *Spatial) Submit(at Point, fn func(context.Context), opts ...smartpool.Option) error {
	if fn == nil {
		return smartpool.ErrNilTask
	}
	return s.SubmitTask(at, smartpool.Func(fn), opts...)
}

// SubmitTask queues t at position at. It returns smartpool.ErrNilTask for a
// nil t and smartpool.ErrClosed once the pool's Close started. With options
// the pool queues t (source.Bits.Submit): smartpool.WithContext then
// waits for a unit of the pool's in-flight limit and cancels t if its
// context ends while t is queued; WithDeadline and WithPriority are refused
// with smartpool.ErrOption.
func (s *Spatial) SubmitTask(at Point, t smartpool.Task, opts ...smartpool.Option) error {
	if len(opts) == 0 {
		return s.src.push(at, t, false)
	}
	s.src.mu.Lock()
	b := s.src.bits // read under the lock: Attach may run concurrently
	s.src.mu.Unlock()
	return b.Submit(t, smartpool.Order{}, opts, func(t smartpool.Task, o smartpool.Order) error {
		if o.HasDeadline || o.HasPriority {
			return source.Unordered(o)
		}
		return s.src.push(at, t, false) // at the submit's position, not the focus
	})
}

// Len returns the number of queued tasks.
func (s *Spatial) Len() int {
	s.src.mu.Lock()
	defer s.src.mu.Unlock()
	return len(s.src.items)
}

// spatialSource is the side of a Spatial the pool talks to: it implements
// source.Source by the contract in its documentation.
type spatialSource struct {
	focus *Focus // read-only after NewSpatial

	mu      sync.Mutex
	items   []spatialItem // in submission order; guarded by mu
	closed  bool          // Close was called; guarded by mu
	dropped bool          // Close(true) emptied it: Requeue refuses too; guarded by mu
	bits    source.Bits   // set by Attach; guarded by mu
}

type spatialItem struct {
	at   Point
	task smartpool.Task
}

// Push queues t where the focus is now: the by-key submit of Pool.Submit.
// The focus may move away before t runs.
func (s *spatialSource) Push(t smartpool.Task, o smartpool.Order) error {
	if o.HasDeadline || o.HasPriority {
		return source.Unordered(o)
	}
	return s.push(s.focus.At(), t, false)
}

// Requeue queues a task that yielded and re-enters the pool, as Push does.
// It is refused only once Close(true) emptied s, or while no pool holds s.
func (s *spatialSource) Requeue(t smartpool.Task) error { return s.push(s.focus.At(), t, true) }

func (s *spatialSource) push(at Point, t smartpool.Task, requeue bool) error {
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
func (s *spatialSource) Poll(int) smartpool.Task {
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

// Queues returns 1: a Spatial is one queue.
func (s *spatialSource) Queues() int { return 1 }

// Attach binds s to a pool and publishes whether it holds tasks; it returns
// smartpool.ErrAttached if s already belongs to a pool.
func (s *spatialSource) Attach(b source.Bits) error {
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
func (s *spatialSource) Close(drop bool) []smartpool.Task {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.bits.Closing() {
		return nil // a mistaken call while a pool serves s, or before one does
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
		player.Move(at) // after the submits: a poll reads the focus, Submit does not
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
