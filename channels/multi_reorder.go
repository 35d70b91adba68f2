package channels

import (
	"errors"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/source"
)

// The Multi's side of source.Reorderer, for smartpool.Handle: a task
// never moves between shards (a yielded one re-enters through Requeue,
// which indexes nothing), so the shard that queued an indexed task is the
// only one that can hold it. The Multi keeps no index of its own, which
// would cost every indexed submit a shared lock or map the shards exist to
// avoid: Reorder asks the shards in turn, each under its own lock.

// PushIndexed queues t in the next shard, as Push does, indexed for Reorder
// if the shard is a source.Reorderer (a Priority or Deadline shard), by
// the shard's Push otherwise; see source.Reorderer.
func (m *multiSource[C]) PushIndexed(t smartpool.Task, o smartpool.Order) error {
	if t == nil {
		return smartpool.ErrNilTask
	}
	if len(m.shards) == 0 {
		return smartpool.ErrNoQueues
	}
	s := m.srcs[m.nextShard()]
	if r, ok := s.(source.Reorderer); ok {
		return r.PushIndexed(t, o)
	}
	return s.Push(t, o)
}

// Reorder gives the indexed task t the key o in the shard that holds it,
// asking each shard that is a source.Reorderer in turn: O(shards) short
// critical sections, one at a time. It returns source.Unordered(o) if no
// shard orders by o's key (a Multi of FIFOs, or of Priority shards asked
// for a deadline), smartpool.ErrNotQueued if a shard does but none holds t
// (nil included), and nil once the holding shard moved it. A Multi whose
// shards differ in kind answers ErrNotQueued for a task in a shard that
// does not order by o's key when another shard does.
func (m *multiSource[C]) Reorder(t smartpool.Task, o smartpool.Order) error {
	unordered, ordered := source.Unordered(o), false // no Reorderer shard: no key is ordered
	for _, s := range m.srcs {
		r, ok := s.(source.Reorderer)
		if !ok {
			continue
		}
		switch err := r.Reorder(t, o); {
		case err == nil:
			return nil
		case errors.Is(err, smartpool.ErrNotQueued):
			if t == nil {
				return err // the key is ordered; there is no task to look for
			}
			ordered = true
		default:
			unordered = err
		}
	}
	if ordered || unordered == nil {
		return smartpool.ErrNotQueued
	}
	return unordered
}
