package statuspage

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"
)

// DeadLetterSource is what a channel that keeps the tasks it gave up on
// (dead letters: a JetStream channel's dead-letter stream, a job table's
// failed rows) implements for the page to show them (Options.DeadLetters):
// each channel's newest, with the reason, the attempts, the times and the
// first bytes of the payload, and, with actions on (Options.Authorize), a
// replay and a delete button beside each. One source may serve several
// channels, named as it likes (usually the pool's keys).
//
// The page calls NewestDeadLetters at most every 5 seconds while it is
// viewed, with a context that ends after 2 seconds, and again before each
// replay or delete: it acts only on a dead letter it would show. The
// methods may be called concurrently. Their errors are shown as they are.
type DeadLetterSource interface {
	// NewestDeadLetters returns, for each channel of the source, up to n
	// (at least 1) of its dead letters, newest first, and how many it
	// keeps in all. A channel whose dead letters could not be read has
	// Err set. It must return when ctx ends.
	NewestDeadLetters(ctx context.Context, n int) []DeadLetterList
	// ReplayDeadLetter runs dead letter id of channel again, as a new
	// task, and takes it out of the dead letters.
	ReplayDeadLetter(ctx context.Context, channel, id string) error
	// DeleteDeadLetter takes dead letter id of channel out of the dead
	// letters for good.
	DeleteDeadLetter(ctx context.Context, channel, id string) error
}

// DeadLetterList is the newest dead letters of one channel, as a
// DeadLetterSource returns them.
type DeadLetterList struct {
	Channel string       // the channel's name, as the source calls it; the page passes it back to Replay and Delete
	Kept    uint64       // dead letters the channel keeps in all
	Letters []DeadLetter // the newest, newest first
	Err     error        // why the letters could not be read, if they could not
}

// DeadLetter is one task a channel gave up on.
type DeadLetter struct {
	// ID names it to the source's ReplayDeadLetter and DeleteDeadLetter
	// (a stream sequence number, a row's ID): at most 256 bytes.
	ID       string
	Reason   string    // why the channel gave up: the handler's last error, a timeout
	Attempts uint64    // the runs it had
	Born     time.Time // first submitted; zero if unknown
	Died     time.Time // given up on; zero if unknown
	Payload  []byte    // the page shows its first 64 bytes, quoted
}

const (
	letterEvery  = 5 * time.Second // the page reads the sources at most this often
	letterRead   = 2 * time.Second // and waits this long for them
	payloadShown = 64
	maxID        = 256
)

// letterCache keeps the dead letters last read, for letterEvery.
type letterCache struct {
	at    time.Time
	lists [][]DeadLetterList // per source
}

// letterList is the page's view of a DeadLetterList.
type letterList struct {
	Source  int          `json:"source"` // its index in Options.DeadLetters
	Channel string       `json:"channel"`
	Kept    uint64       `json:"kept"`
	Err     string       `json:"err,omitempty"`
	Letters []letterView `json:"letters"`
}

type letterView struct {
	ID       string `json:"id"`
	Reason   string `json:"reason"`
	Attempts uint64 `json:"attempts"`
	Born     string `json:"born"`
	Died     string `json:"died"`
	Payload  string `json:"payload"` // the first bytes, quoted
	Size     int    `json:"size"`    // the payload's length
}

// deadLetters returns the dead letters to show: those last read, if read
// within letterEvery, or read now.
func (h *handler[K]) deadLetters(ctx context.Context) []letterList {
	if len(h.o.DeadLetters) == 0 {
		return nil
	}
	now := time.Now()
	h.mu.Lock()
	lists := h.letters.lists
	fresh := lists != nil && now.Sub(h.letters.at) < letterEvery
	h.mu.Unlock()
	if !fresh {
		ctx, cancel := context.WithTimeout(ctx, letterRead)
		lists = h.readLetters(ctx)
		cancel()
		h.mu.Lock()
		h.letters = letterCache{at: now, lists: lists}
		h.mu.Unlock()
	}
	var out []letterList
	for i, ls := range lists {
		for _, l := range ls {
			v := letterList{Source: i, Channel: l.Channel, Kept: l.Kept}
			if l.Err != nil {
				v.Err = l.Err.Error()
			}
			for _, d := range l.Letters {
				v.Letters = append(v.Letters, letterView{ID: d.ID, Reason: d.Reason, Attempts: d.Attempts,
					Born: when(d.Born), Died: when(d.Died), Payload: payload(d.Payload), Size: len(d.Payload)})
			}
			out = append(out, v)
		}
	}
	return out
}

// readLetters asks each source for its newest dead letters.
func (h *handler[K]) readLetters(ctx context.Context) [][]DeadLetterList {
	lists := make([][]DeadLetterList, len(h.o.DeadLetters))
	for i, s := range h.o.DeadLetters {
		lists[i] = s.NewestDeadLetters(ctx, h.o.DeadLetterRows)
	}
	return lists
}

// when prints t for the page, "-" if unknown.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.DateTime)
}

// payload prints the first payloadShown bytes of p, quoted as Go does.
func payload(p []byte) string {
	head := p[:min(len(p), payloadShown)]
	for len(head) > 0 && len(head) < len(p) && !utf8.Valid(head) { // a rune cut in two
		head = head[:len(head)-1]
	}
	s := strconv.Quote(string(head))
	if len(head) < len(p) {
		s += "…"
	}
	return s
}

// letterAction replays or deletes the dead letter f names.
func (h *handler[K]) letterAction(ctx context.Context, action string, f url.Values) (int, string) {
	i, err := strconv.Atoi(f.Get("source"))
	if err != nil || i < 0 || i >= len(h.o.DeadLetters) {
		return http.StatusBadRequest, fmt.Sprintf("source %.40q: want the index of a dead-letter source, 0 to %d", f.Get("source"), len(h.o.DeadLetters)-1)
	}
	channel, id := f.Get("channel"), f.Get("id")
	if channel == "" || id == "" || len(id) > maxID {
		return http.StatusBadRequest, fmt.Sprintf("a dead letter needs a channel and an id of 1 to %d bytes", maxID)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.o.ActionTimeout)
	defer cancel()
	src := h.o.DeadLetters[i]
	found := false
	for _, l := range src.NewestDeadLetters(ctx, h.o.DeadLetterRows) {
		for _, d := range l.Letters {
			found = found || l.Channel == channel && d.ID == id
		}
	}
	h.mu.Lock()
	h.letters = letterCache{} // the page's view may be stale: read them again for the next one
	h.mu.Unlock()
	what := fmt.Sprintf("dead letter %.80q of channel %.80q", id, channel)
	if !found {
		return http.StatusNotFound, fmt.Sprintf("no %s among those the page shows: replayed or deleted already?", what)
	}
	if action == "replay" {
		err = src.ReplayDeadLetter(ctx, channel, id)
	} else {
		err = src.DeleteDeadLetter(ctx, channel, id)
	}
	h.mu.Lock()
	h.letters = letterCache{} // changed: read them again for the next view
	h.mu.Unlock()
	if err != nil {
		return http.StatusBadGateway, fmt.Sprintf("%s %s: %v", action, what, err)
	}
	if action == "replay" {
		return http.StatusOK, "replayed " + what
	}
	return http.StatusOK, "deleted " + what
}
