package jetstream

import (
	"errors"
	"testing"
	"time"
)

// The page's dead-letter source lists a channel's newest dead letters,
// newest first, across the gap a delete leaves, replays one and deletes one,
// and refuses ids that name no dead letter.
func TestDeadLetterSource(t *testing.T) {
	c := embedded(t, t.TempDir(), false)
	dead := make(chan DeadLetter, 3)
	ch, err := c.Channel(testCtx(t), "orphans", NewRegistry(), ChannelOptions{UnknownDelay: 20 * time.Millisecond,
		UnknownMaxAge: 200 * time.Millisecond, OnDeadLetter: func(d DeadLetter) { dead <- d }})
	if err != nil {
		t.Fatal(err)
	}
	p := onePool(t, ch, 1)
	for _, payload := range []string{"a", "b", "c"} {
		if _, err := c.Publish(testCtx(t), "orphans", "later", []byte(payload)); err != nil {
			t.Fatal(err)
		}
		recv(t, dead, "dead letter "+payload)
	}
	closePool(t, p)

	lists := c.NewestDeadLetters(testCtx(t), 2)
	if len(lists) != 1 || lists[0].Channel != "orphans" || lists[0].Err != nil || lists[0].Kept != 3 || len(lists[0].Letters) != 2 {
		t.Fatalf("lists %+v: want orphans, 3 kept, the newest 2", lists)
	}
	newest, second := lists[0].Letters[0], lists[0].Letters[1]
	if string(newest.Payload) != "c" || string(second.Payload) != "b" || newest.Reason == "" || newest.Died.IsZero() {
		t.Fatalf("letters %+v, %+v: want c then b, with their reason", newest, second)
	}
	if err := c.DeleteDeadLetter(testCtx(t), "orphans", newest.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteDeadLetter(testCtx(t), "orphans", newest.ID); !errors.Is(err, ErrNoDeadLetter) {
		t.Fatalf("second delete: %v, want ErrNoDeadLetter", err)
	}
	lists = c.NewestDeadLetters(testCtx(t), 5)
	if got := lists[0]; got.Kept != 2 || len(got.Letters) != 2 || string(got.Letters[0].Payload) != "b" || string(got.Letters[1].Payload) != "a" {
		t.Fatalf("after the delete: %+v; want b then a, across the gap", got)
	}
	// Replayed into a channel that has no handler for it either, it is
	// published again and leaves the dead letters.
	if err := c.ReplayDeadLetter(testCtx(t), "orphans", got(lists).Letters[0].ID); err != nil {
		t.Fatal(err)
	}
	if n, err := c.DeadLetterCount(testCtx(t), "orphans"); err != nil || n != 1 {
		t.Fatalf("count after replay %d, %v; want 1", n, err)
	}
	for _, id := range []string{"", "0", "x", "-1"} {
		if err := c.ReplayDeadLetter(testCtx(t), "orphans", id); !errors.Is(err, ErrNoDeadLetter) {
			t.Errorf("replay %q: %v, want ErrNoDeadLetter", id, err)
		}
		if err := c.DeleteDeadLetter(testCtx(t), "orphans", id); !errors.Is(err, ErrNoDeadLetter) {
			t.Errorf("delete %q: %v, want ErrNoDeadLetter", id, err)
		}
	}
}

func got[T any](xs []T) T { return xs[0] }
