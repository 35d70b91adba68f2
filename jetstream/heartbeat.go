package jetstream

import (
	"context"
	"time"
)

// heartbeat tells the server every AckWait/3 that each message this process
// holds (queued here, running, or yielded) is still being worked on, so that
// only a process that died or lost its connection has its messages
// redelivered. Every QueueTimeout/4 it passes on queued messages that no
// worker took within QueueTimeout (sweep). While a recovery after a
// failover asks it to, it keeps them alive every recoverDelay/3. It runs until the client closes:
// a task may outlive its pool's Close.
func (ch *Channel) heartbeat(ctx context.Context) {
	tick := time.NewTicker(max(ch.opts.AckWait/3, time.Millisecond))
	defer tick.Stop()
	sweep := time.NewTicker(max(ch.opts.QueueTimeout/4, time.Millisecond))
	defer sweep.Stop()
	fast := time.NewTimer(time.Hour) // the keep-alives of a recovery (failover.go)
	fast.Stop()
	defer fast.Stop()
	var batch []*message
	for {
		select {
		case <-ctx.Done():
			return
		case <-sweep.C:
			ch.sweep()
			continue
		case <-tick.C:
		case <-ch.fo.kick:
		case <-fast.C:
		}
		if time.Now().UnixNano() < ch.fo.aliveUntil.Load() {
			fast.Reset(max(ch.recoverDelay()/3, time.Millisecond))
		}
		ch.mu.Lock()
		for m := range ch.held {
			batch = append(batch, m)
		}
		ch.mu.Unlock()
		for _, m := range batch {
			if m.msg.InProgress() == nil {
				ch.stats.keptAlive.Add(1)
			}
		}
		clear(batch)
		batch = batch[:0]
	}
}
