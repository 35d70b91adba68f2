package jetstream

import (
	"context"
	"time"
)

// heartbeat tells the server every AckWait/3 that each message this process
// holds (queued here, running, or yielded) is still being worked on, so that
// only a process that died or lost its connection has its messages
// redelivered. It runs until the client closes: a task may outlive its
// pool's Close.
func (ch *Channel) heartbeat(ctx context.Context) {
	period := max(ch.opts.AckWait/3, time.Millisecond)
	tick := time.NewTicker(period)
	defer tick.Stop()
	var batch []*message
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
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
