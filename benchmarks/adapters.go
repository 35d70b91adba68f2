package benchmarks

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/alitto/pond/v2"
	"github.com/gammazero/workerpool"
	"github.com/panjf2000/ants/v2"
	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/sourcegraph/conc/pool"
	"golang.org/x/sync/errgroup"
)

// Pool is what a workload sees of a pool under test. Every adapter counts
// its unfinished tasks with a sync.WaitGroup. The hand-written pools call
// Done in their workers, after the task, as people write them: no closure
// per task. The libraries run only the function they are given, so their
// adapters wrap each task in one closure that calls Done, the cost of the
// caller's own closure in a program.
type Pool interface {
	// Submit runs fn on the pool. It may block, as the pool's own submit does.
	Submit(fn func())
	// Wait blocks until every task submitted so far, including tasks that
	// tasks submitted, has finished.
	Wait()
	// Close releases the pool's goroutines. Call it after Wait.
	Close()
}

// Prioritizer is implemented by pools that can run a task ahead of those
// queued with Submit. PrepareHigh makes fn into the pool's own task, as a
// caller of that pool writes it, and returns the call that queues it ahead
// of the others. The priority-latency workload times that call to the
// task's start: the making of the task (allocating its closures, the
// caller's work) stays outside the figure, for every such pool alike. It
// times Submit for pools without a Prioritizer.
type Prioritizer interface {
	PrepareHigh(fn func()) (submit func())
}

// Tenanter is implemented by pools that queue each tenant's tasks apart.
// The tenant-fairness workload submits each tenant's tasks through the
// function NewTenant returns when a pool has it, and with Submit otherwise
// (one queue shared by every tenant).
type Tenanter interface {
	NewTenant() (submit func(fn func()), err error)
}

// Adapter names a pool and builds it.
type Adapter struct {
	// Name is the short name used in tables and charts.
	Name string
	// Policy says what the pool's submit does when every worker is busy.
	Policy string
	// New returns a pool of the given size. Unbounded pools ignore it.
	New func(workers int) Pool
	// NewIO returns the pool the blocking-io workload uses, and a footnote
	// about it (or ""). nil means New(IOInFlight).
	NewIO func() (Pool, string)
}

// ChanBuffer is the buffer of the hand-written channel pools, a common choice.
const ChanBuffer = 1024

// Adapters returns every pool under test, in table order.
func Adapters() []Adapter {
	return []Adapter{
		{Name: "goroutines", Policy: "no queue: one goroutine per task", New: newGoroutines},
		{Name: "chan-pool", Policy: "queues 1,024, then blocks", New: newChanPool},
		{Name: "two-chan", Policy: "queues 1,024 per chan, then blocks", New: newTwoChan},
		{Name: "ants", Policy: "no queue: blocks", New: newAnts},
		{Name: "pond", Policy: "queues, unbounded", New: newPond},
		{Name: "workerpool", Policy: "queues, unbounded", New: newWorkerpool},
		{Name: "conc", Policy: "no queue: blocks", New: newConc},
		{Name: "errgroup", Policy: "no queue: blocks", New: newErrgroup},
		{Name: "smartpool", Policy: "queues, unbounded", New: NewSmartpool, NewIO: smartpoolIO},
	}
}

// tracker is the WaitGroup every adapter embeds for Wait.
type tracker struct{ wg sync.WaitGroup }

func (t *tracker) Wait() { t.wg.Wait() }

type goroutines struct{ tracker }

func newGoroutines(int) Pool { return new(goroutines) }

func (p *goroutines) Submit(fn func()) {
	p.wg.Add(1)
	go func() { fn(); p.wg.Done() }()
}

func (p *goroutines) Close() {}

// chanPool is the pool people write by hand: workers ranging over a
// buffered channel of functions.
type chanPool struct {
	tracker
	tasks chan func()
}

func newChanPool(workers int) Pool {
	p := &chanPool{tasks: make(chan func(), ChanBuffer)}
	for range workers {
		go func() {
			for f := range p.tasks {
				f()
				p.wg.Done()
			}
		}()
	}
	return p
}

func (p *chanPool) Submit(fn func()) {
	p.wg.Add(1)
	p.tasks <- fn
}

func (p *chanPool) Close() { close(p.tasks) }

// twoChan is the naive priority pool: two buffered channels and workers
// that take from the high one first, then from whichever is ready.
type twoChan struct {
	tracker
	high, low chan func()
	quit      chan struct{}
}

func newTwoChan(workers int) Pool {
	p := &twoChan{high: make(chan func(), ChanBuffer), low: make(chan func(), ChanBuffer), quit: make(chan struct{})}
	for range workers {
		go p.work()
	}
	return p
}

func (p *twoChan) work() {
	for {
		select {
		case f := <-p.high:
			f()
			p.wg.Done()
			continue
		default:
		}
		select {
		case f := <-p.high:
			f()
		case f := <-p.low:
			f()
		case <-p.quit:
			return
		}
		p.wg.Done()
	}
}

func (p *twoChan) Submit(fn func()) {
	p.wg.Add(1)
	p.low <- fn
}

// PrepareHigh returns the call that queues fn on the high channel.
func (p *twoChan) PrepareHigh(fn func()) func() {
	return func() {
		p.wg.Add(1)
		p.high <- fn
	}
}

func (p *twoChan) Close() { close(p.quit) }

type antsPool struct {
	tracker
	p *ants.Pool
}

func newAnts(workers int) Pool {
	p, err := ants.NewPool(workers)
	if err != nil {
		panic(err) // only for a size < 1, which no workload asks for
	}
	return &antsPool{p: p}
}

func (p *antsPool) Submit(fn func()) {
	p.wg.Add(1)
	if err := p.p.Submit(func() { fn(); p.wg.Done() }); err != nil {
		panic(err) // the pool is open and blocking: Submit does not fail
	}
}

func (p *antsPool) Close() { p.p.Release() }

type pondPool struct {
	tracker
	p pond.Pool
}

func newPond(workers int) Pool { return &pondPool{p: pond.NewPool(workers)} }

func (p *pondPool) Submit(fn func()) {
	p.wg.Add(1)
	if err := p.p.Go(func() { fn(); p.wg.Done() }); err != nil {
		panic(err) // unbounded and open: Go does not fail
	}
}

func (p *pondPool) Close() { p.p.StopAndWait() }

type workerPool struct {
	tracker
	p *workerpool.WorkerPool
}

func newWorkerpool(workers int) Pool { return &workerPool{p: workerpool.New(workers)} }

func (p *workerPool) Submit(fn func()) {
	p.wg.Add(1)
	p.p.Submit(func() { fn(); p.wg.Done() })
}

func (p *workerPool) Close() { p.p.StopWait() }

type concPool struct {
	tracker
	p *pool.Pool
}

func newConc(workers int) Pool { return &concPool{p: pool.New().WithMaxGoroutines(workers)} }

func (p *concPool) Submit(fn func()) {
	p.wg.Add(1)
	p.p.Go(func() { fn(); p.wg.Done() })
}

func (p *concPool) Close() { p.p.Wait() }

type errgroupPool struct {
	tracker
	g errgroup.Group
}

func newErrgroup(workers int) Pool {
	p := new(errgroupPool)
	p.g.SetLimit(workers)
	return p
}

func (p *errgroupPool) Submit(fn func()) {
	p.wg.Add(1)
	p.g.Go(func() error { fn(); p.wg.Done(); return nil })
}

func (p *errgroupPool) Close() { _ = p.g.Wait() }

// Smartpool is the adapter of a smartpool with one FIFO channel per queue,
// spread over levels, level 0 (the highest) first. Submit uses the last
// queue, on the lowest level; PrepareHigh uses queue 0, on the highest.
type Smartpool struct {
	tracker
	owned *smartpool.OwnedPool[int]
	fifos []*channels.FIFO // by queue number; read-only
}

// NewSmartpool returns a smartpool with a high and a low FIFO level.
func NewSmartpool(workers int) Pool { return NewSmartpoolLevels(workers, 2, 2) }

// NewSmartpoolLevels returns a smartpool with the given number of FIFO
// queues spread evenly over the given number of levels (queues >= levels).
// It panics if smartpool.New rejects the configuration.
func NewSmartpoolLevels(workers, queues, levels int) *Smartpool {
	return NewSmartpoolQuantum(workers, queues, levels, 0)
}

// NewSmartpoolQuantum is NewSmartpoolLevels with Config.Quantum quantum.
func NewSmartpoolQuantum(workers, queues, levels, quantum int) *Smartpool {
	b := &spBehavior{workers: workers, quantum: quantum, levels: make([][]smartpool.ChannelParams[int], levels)}
	for q := range queues {
		b.fifos = append(b.fifos, channels.NewFIFO())
		l := q * levels / queues
		b.levels[l] = append(b.levels[l], smartpool.ChannelParams[int]{Key: q, CompleteOnClose: true})
	}
	owned, err := smartpool.New[int](b)
	if err != nil {
		panic(err)
	}
	return &Smartpool{owned: owned, fifos: b.fifos}
}

// Submit queues fn on the lowest level.
func (p *Smartpool) Submit(fn func()) { p.SubmitTo(len(p.fifos)-1, fn) }

// PrepareHigh makes fn into a task as a smartpool caller writes one (a
// func(context.Context)) and returns the call that queues it on the
// highest level.
func (p *Smartpool) PrepareHigh(fn func()) func() {
	task := func(context.Context) { fn(); p.wg.Done() }
	return func() {
		p.wg.Add(1)
		if err := p.fifos[0].Submit(task); err != nil {
			panic(err) // open and unbounded: Submit does not fail
		}
	}
}

// SubmitTo queues fn on queue q, numbered from the highest level's first.
func (p *Smartpool) SubmitTo(q int, fn func()) {
	p.wg.Add(1)
	if err := p.fifos[q].Submit(func(context.Context) { fn(); p.wg.Done() }); err != nil {
		panic(err) // open and unbounded: Submit does not fail
	}
}

// Close closes the pool, running whatever is still queued.
func (p *Smartpool) Close() {
	if _, err := p.owned.Close(context.Background()); err != nil {
		panic(err)
	}
}

// SmartpoolTasks is smartpool written as the hand-written pool is: the
// caller's func() goes in as it is, as a Task (a func type with a Run
// method: no allocation), and the channel's OnEnd calls the WaitGroup's
// Done, as the hand-written pool's worker does. One FIFO channel.
type SmartpoolTasks struct {
	tracker
	owned *smartpool.OwnedPool[int]
	pool  *smartpool.Pool[int]
}

// plainTask runs a func() as a smartpool.Task.
type plainTask func()

func (f plainTask) Run(context.Context) { f() }

// NewSmartpoolTasks returns a SmartpoolTasks of the given size. It panics if
// smartpool.New rejects the configuration.
func NewSmartpoolTasks(workers int) *SmartpoolTasks {
	p := &SmartpoolTasks{}
	b := &spBehavior{workers: workers, fifos: []*channels.FIFO{channels.NewFIFO()},
		levels: [][]smartpool.ChannelParams[int]{{{Key: 0, CompleteOnClose: true,
			OnEnd: func(smartpool.Task, smartpool.Outcome) { p.wg.Done() }}}}}
	owned, err := smartpool.New[int](b)
	if err != nil {
		panic(err)
	}
	p.owned, p.pool = owned, owned.Pool()
	return p
}

// Submit queues fn as it is.
func (p *SmartpoolTasks) Submit(fn func()) {
	p.wg.Add(1)
	if err := p.pool.SubmitTask(0, plainTask(fn)); err != nil {
		panic(err) // open and unbounded: SubmitTask does not fail
	}
}

// Close closes the pool, running whatever is still queued.
func (p *SmartpoolTasks) Close() {
	if _, err := p.owned.Close(context.Background()); err != nil {
		panic(err)
	}
}

// SmartpoolTenants is the adapter of a smartpool with a FIFO channel per
// tenant, all in one level, whose workers serve the tenants' queues in
// rotation. Each channel is added on the tenant's arrival (Pool.AddChannel)
// into room the level reserved (Config.Spare). Submit uses the first
// tenant's channel, added by NewSmartpoolTenants.
type SmartpoolTenants struct {
	tracker
	owned  *smartpool.OwnedPool[int]
	next   atomic.Int64 // tenants added so far: the next tenant's key
	submit func(fn func())
}

// NewSmartpoolTenants returns a smartpool with room for the given number of
// tenants, the first one added. It panics if smartpool.New or the first
// AddChannel fails.
func NewSmartpoolTenants(workers, tenants int) *SmartpoolTenants {
	owned, err := smartpool.New(smartpool.Levels[int]{nil}.With(smartpool.Config[int]{
		Workers: workers, Spare: []int{tenants}, Logger: quiet,
	}))
	if err != nil {
		panic(err)
	}
	p := &SmartpoolTenants{owned: owned}
	if p.submit, err = p.NewTenant(); err != nil {
		panic(err)
	}
	return p
}

// NewTenant adds a channel for a new tenant and returns its submit. It
// fails once the room New reserved is used up.
func (p *SmartpoolTenants) NewTenant() (func(fn func()), error) {
	key := int(p.next.Add(1) - 1)
	fifo := channels.NewFIFO()
	if err := p.owned.Pool().AddChannel(0, smartpool.ChannelParams[int]{Key: key, CompleteOnClose: true}, fifo, key); err != nil {
		return nil, err
	}
	return func(fn func()) {
		p.wg.Add(1)
		if err := fifo.Submit(func(context.Context) { fn(); p.wg.Done() }); err != nil {
			panic(err) // open and unbounded: Submit does not fail
		}
	}, nil
}

// Submit queues fn on the first tenant's channel.
func (p *SmartpoolTenants) Submit(fn func()) { p.submit(fn) }

// Close closes the pool, running whatever is still queued.
func (p *SmartpoolTenants) Close() {
	if _, err := p.owned.Close(context.Background()); err != nil {
		panic(err)
	}
}

// smartpoolIO is smartpool's blocking-io pool, with a budget per resource as
// Paul Khuong's critique of generic pools asks of a pool:
// 2 workers (a CPU budget) and an I/O budget of IOInFlight waits at once,
// expressed as the MaxInFlight cap of the channel the I/O tasks come from.
// Each task waits through smartpool.Yield, so no worker is held meanwhile,
// and keeps its slot of the cap until it ends; it re-enters through a
// "resume" channel on the level above. Tasks beyond the budget stay queued.
func smartpoolIO() (Pool, string) {
	b := &ioBehavior{io: channels.NewFIFO(), resume: channels.NewFIFO()}
	owned, err := smartpool.New[int](b)
	if err != nil {
		panic(err)
	}
	return &yieldingIO{owned: owned, io: b.io},
		fmt.Sprintf("smartpool: 2 workers, each wait through smartpool.Yield, MaxInFlight %d on the I/O channel", IOInFlight)
}

// ioBehavior: resume above io; io capped at IOInFlight tasks in progress.
type ioBehavior struct{ io, resume *channels.FIFO }

func (b *ioBehavior) Config() smartpool.Config[int] {
	return smartpool.Config[int]{Workers: 2, Logger: quiet, Levels: [][]smartpool.ChannelParams[int]{
		{{Key: 1, CompleteOnClose: true}},
		{{Key: 0, CompleteOnClose: true, MaxInFlight: IOInFlight}},
	}}
}

func (b *ioBehavior) Channel(k int) smartpool.Channel {
	if k == 0 {
		return b.io
	}
	return b.resume
}

func (b *ioBehavior) Followup(int) int { return 1 }

// yieldingIO runs each task's body as the wait of a Yield.
type yieldingIO struct {
	owned *smartpool.OwnedPool[int]
	io    *channels.FIFO
	wg    sync.WaitGroup
}

func (p *yieldingIO) Submit(fn func()) {
	p.wg.Add(1)
	err := p.io.Submit(func(ctx context.Context) {
		smartpool.Yield(ctx, fn)
		p.wg.Done()
	})
	if err != nil {
		panic(err)
	}
}

func (p *yieldingIO) Wait() { p.wg.Wait() }

func (p *yieldingIO) Close() {
	if _, err := p.owned.Close(context.Background()); err != nil {
		panic(err)
	}
}

type spBehavior struct {
	workers int
	quantum int // Config.Quantum
	fifos   []*channels.FIFO
	levels  [][]smartpool.ChannelParams[int]
}

func (b *spBehavior) Config() smartpool.Config[int] {
	return smartpool.Config[int]{Workers: b.workers, Levels: b.levels, Logger: quiet, Quantum: b.quantum}
}

func (b *spBehavior) Channel(k int) smartpool.Channel { return b.fifos[k] }

func (b *spBehavior) Followup(k int) int { return k }

// quiet drops smartpool's log lines (start and close at Info, per pool),
// which would otherwise interleave with the suite's progress lines.
var quiet = slog.New(slog.DiscardHandler)
