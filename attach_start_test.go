package smartpool_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/stretchr/testify/require"
)

// A channel that queues tasks in Attach, before New has started the pool,
// gets them run: their wake-up found no worker to create, so the start looks.
func TestAttach_TaskQueuedBeforeStartRuns(t *testing.T) {
	ran := make(chan struct{})
	f := plugForgetful(&forgetful{onAttach: func(f *forgetful) {
		f.mu.Lock()
		_ = f.queueLocked(smartpool.Func(func(context.Context) { close(ran) }))
	}})
	start(t, &behavior{workers: 1, levels: [][]ch{{{key: "c", c: f, coc: true}}}})
	select {
	case <-ran:
	case <-time.After(long):
		t.Fatalf("a task queued during Attach did not run within %v", long)
	}
}

// A goroutine a channel starts in Attach that waits for a unit of the
// in-flight limit (Bits.AdmitWait) gets it once the pool starts, not before
// the limit is set: the unit is counted while its task runs and comes back.
func TestAttach_AdmitWaitBeforeStartWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		admitted, release := make(chan error, 1), make(chan struct{})
		f := plugForgetful(&forgetful{onAttach: func(f *forgetful) {
			f.bits.AdmitsOwnSubmits()
			b := f.bits
			go func() {
				err := b.AdmitWait(context.Background())
				admitted <- err
				if err == nil {
					_ = src(f).Requeue(smartpool.Func(func(context.Context) { <-release }))
				}
			}()
			synctest.Wait() // the goroutine has run as far as it can before New returns
			select {
			case err := <-admitted:
				t.Errorf("AdmitWait returned %v before the pool started", err)
				admitted <- err
			default:
			}
		}})
		o, err := smartpool.New[string](&behavior{workers: 1, limit: 2, idle: -1, levels: [][]ch{{{key: "c", c: f, coc: true}}}})
		require.NoError(t, err)
		require.NoError(t, <-admitted)
		synctest.Wait()
		s := o.Pool().Stats()
		require.Equal(t, [2]int{1, 1}, [2]int{s.Busy, s.Admitted}, "busy workers and units held while the task runs")
		close(release)
		synctest.Wait()
		r, err := o.Close(context.Background())
		require.NoError(t, err)
		require.Equal(t, uint64(1), r.Total().Ran)
		require.Zero(t, o.Pool().Stats().Admitted, "units held after every task ended")
	})
}

// AdmitWait called from Attach itself, which New waits for, fails at once
// with a configuration error instead of waiting for a start that cannot come.
func TestAttach_AdmitWaitInAttachFails(t *testing.T) {
	var err error
	f := plugForgetful(&forgetful{onAttach: func(f *forgetful) { err = f.bits.AdmitWait(context.Background()) }})
	created := make(chan *smartpool.OwnedPool[string], 1)
	go func() {
		o, _ := smartpool.New[string](&behavior{workers: 1, limit: 1, levels: [][]ch{{{key: "c", c: f, coc: true}}}})
		created <- o
	}()
	select {
	case o := <-created:
		if o != nil {
			closeWithin(t, o, long)
		}
	case <-time.After(long):
		t.Fatalf("New did not return within %v", long)
	}
	require.ErrorIs(t, err, smartpool.ErrConfig)
	require.ErrorContains(t, err, "AdmitWait called from Attach")
}
