package jetstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"
)

// Opening a channel creates or joins its three streams and its two durable
// consumers. On a cluster that was just formed, or while it elects a
// leader, or when several processes create the same streams at once, one
// attempt may go unanswered (each waits at most openAttempt) or be told to
// wait (503): the attempt is made again, after a growing pause, until the
// caller's context ends, or openBound has passed if it has no deadline.

// openBound bounds opening a channel whose context has no deadline.
const openBound = time.Minute

// openAttempt bounds one request while a channel opens.
const openAttempt = 5 * time.Second

// ErrStreamConflict is returned by Client.Channel, Client.Publish and the
// other calls that create a channel's streams when a stream exists with
// other settings than this client's Options (Replicas, DuplicateWindow) or
// was not made by this package. The streams are shared by every process:
// one process must not silently change them for all, so the call is
// refused. Give every process the same Options; to change a setting, edit
// the streams (nats stream edit SMARTPOOL_<channel>, SMARTPOOL_PASS_<channel>
// and SMARTPOOL_DLQ_<channel>) and then deploy the new Options.
var ErrStreamConflict = errors.New("jetstream: the channel's stream exists with other settings")

// errOpenAgain: a create lost a race to another process's; read what won.
var errOpenAgain = errors.New("jetstream: created concurrently")

// openContext gives ctx the deadline openBound if it has none.
func openContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, openBound)
}

// retryOpen calls f until it succeeds, fails for good, or ctx ends; each
// call has openAttempt at most.
func retryOpen(ctx context.Context, f func(ctx context.Context) error) error {
	ctx, cancel := openContext(ctx)
	defer cancel()
	start := time.Now()
	pause := errPause{}
	for attempt := 1; ; attempt++ {
		actx, acancel := context.WithTimeout(ctx, openAttempt)
		err := f(actx)
		acancel()
		if err == nil || !openAgain(err) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("gave up after %d attempts in %v (the caller's context, or %v without a deadline): %w",
				attempt, time.Since(start).Round(time.Millisecond), openBound, err)
		}
		pause.wait(ctx)
	}
}

// openAgain reports an error after which another attempt may succeed.
func openAgain(err error) bool {
	var apiErr *njs.APIError
	switch {
	case errors.Is(err, errOpenAgain), errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrNoResponders), errors.Is(err, njs.ErrJetStreamNotEnabled),
		errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrDisconnected):
		return true
	case errors.As(err, &apiErr):
		return apiErr.Code >= 500
	}
	return false
}

// ensureOneStream creates stream cfg, or joins it if it exists with the
// same settings.
func (c *Client) ensureOneStream(ctx context.Context, channel string, cfg njs.StreamConfig) error {
	s, err := c.js.Stream(ctx, cfg.Name)
	if err == nil {
		c.noteCreated(cfg.Name+"/", s.CachedInfo().Created)
		return sameStream(channel, cfg, s.CachedInfo().Config)
	}
	if !errors.Is(err, njs.ErrStreamNotFound) {
		return err
	}
	s, err = c.js.CreateStream(ctx, cfg)
	if errors.Is(err, njs.ErrStreamNameAlreadyInUse) {
		return errOpenAgain // another process created it with other settings: read them
	}
	if err == nil {
		c.noteCreated(cfg.Name+"/", s.CachedInfo().Created)
	}
	return err
}

// noteCreated records when the server created a stream or consumer
// ("stream/" or "stream/consumer"): its first leader election, announced
// then, is no failover (see Client.elected).
func (c *Client) noteCreated(asset string, at time.Time) {
	c.mu.Lock()
	c.created[asset] = at
	c.mu.Unlock()
}

// sameStream compares the settings a channel depends on.
func sameStream(channel string, want, have njs.StreamConfig) error {
	switch {
	case want.Replicas != have.Replicas:
		return fmt.Errorf("%w: channel %q: stream %s has %d replicas, this process asks for %d (Options.Replicas)",
			ErrStreamConflict, channel, want.Name, have.Replicas, want.Replicas)
	case want.Duplicates != have.Duplicates:
		return fmt.Errorf("%w: channel %q: stream %s has a duplicate window of %v, this process asks for %v (Options.DuplicateWindow)",
			ErrStreamConflict, channel, want.Name, have.Duplicates, want.Duplicates)
	case want.Retention != have.Retention || !slices.Equal(want.Subjects, have.Subjects):
		return fmt.Errorf("%w: channel %q: stream %s has retention %v and subjects %q, not %v and %q: not made by this package",
			ErrStreamConflict, channel, want.Name, have.Retention, have.Subjects, want.Retention, want.Subjects)
	}
	return nil
}

// ErrServerTooOld is returned by Connect and Embedded when the server is
// older than minServer: its JetStream API lacks what the channel uses.
var ErrServerTooOld = errors.New("jetstream: nats-server too old: 2.9.0 or later is required")

// minServer is the oldest server version the channel supports.
var minServer = [3]int{2, 9, 0}

// serverAtLeast reports whether the server this client is connected to
// has version v or later; an unreadable version counts as recent.
func (c *Client) serverAtLeast(v [3]int) bool {
	return versionAtLeast(c.nc.ConnectedServerVersion(), v)
}

// versionAtLeast compares a server version ("2.10.4", "2.11.0-beta.1")
// with v; an unreadable version counts as recent.
func versionAtLeast(s string, v [3]int) bool {
	var have [3]int
	s, _, _ = strings.Cut(strings.TrimPrefix(s, "v"), "-")
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return true
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return true
		}
		have[i] = n
	}
	for i := range have {
		if have[i] != v[i] {
			return have[i] > v[i]
		}
	}
	return true
}
