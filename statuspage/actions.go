package statuspage

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/smartpool-go/smartpool"
)

// The actions: see "Actions" in the package documentation (statuspage.go).

// maxForm bounds an action's form: its values are a key, a number and a
// token.
const maxForm = 8 << 10

// tokenLife is how long a token the page was given stays good: the page
// gets a fresh one with each refresh, once a second.
const tokenLife = time.Hour

// fields lists the form fields an action may carry.
var fields = map[string]bool{"action": true, "token": true, "key": true, "n": true, "policy": true,
	"source": true, "channel": true, "id": true}

// authorized reports whether the caller of r may act, and who they are.
func (h *handler[K]) authorized(r *http.Request) (who string, ok bool) {
	if h.o.Authorize == nil {
		return "", false
	}
	return h.o.Authorize(r)
}

// token returns a token for who, issued at now: 8 bytes of issue time, 8
// random bytes, and the first 16 bytes of their HMAC-SHA256 under the
// handler's secret with who. A token names its caller: one issued to an
// operator is no good to another.
func (h *handler[K]) token(who string, now time.Time) string {
	var b [32]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.Unix()))
	_, _ = rand.Read(b[8:16]) // it never fails: see its doc
	copy(b[16:], h.mac(b[:16], who))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (h *handler[K]) mac(head []byte, who string) []byte {
	m := hmac.New(sha256.New, h.secret[:])
	m.Write(head)
	m.Write([]byte(who))
	return m.Sum(nil)[:16]
}

// validToken reports whether tok is a token the handler issued to who
// within tokenLife of now.
func (h *handler[K]) validToken(tok, who string, now time.Time) bool {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) != 32 || !hmac.Equal(b[16:], h.mac(b[:16], who)) {
		return false
	}
	issued := time.Unix(int64(binary.BigEndian.Uint64(b[:8])), 0)
	return !issued.After(now.Add(time.Minute)) && now.Sub(issued) < tokenLife
}

// act carries out the action r asks for, or refuses it.
func (h *handler[K]) act(w http.ResponseWriter, r *http.Request) {
	if h.o.Authorize == nil {
		h.refuse(w, r, "", http.StatusForbidden, "actions are off: the program did not set statuspage.Options.Authorize, so the page is read-only")
		return
	}
	who, ok := h.o.Authorize(r)
	if !ok {
		h.refuse(w, r, who, http.StatusForbidden, "not authorized to act on this pool")
		return
	}
	if err := h.csrf.Check(r); err != nil {
		h.refuse(w, r, who, http.StatusForbidden, "refused: "+err.Error())
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		if tooBig := new(http.MaxBytesError); errors.As(err, &tooBig) {
			h.refuse(w, r, who, http.StatusRequestEntityTooLarge, fmt.Sprintf("the form is larger than %d bytes", maxForm))
			return
		}
		h.refuse(w, r, who, http.StatusBadRequest, "malformed form: "+err.Error())
		return
	}
	f := r.PostForm
	for name, vals := range f {
		switch {
		case !fields[name]:
			h.refuse(w, r, who, http.StatusBadRequest, fmt.Sprintf("unknown field %.40q", name))
			return
		case len(vals) > 1:
			h.refuse(w, r, who, http.StatusBadRequest, fmt.Sprintf("field %s given %d times", name, len(vals)))
			return
		}
	}
	if !h.validToken(f.Get("token"), who, time.Now()) {
		h.refuse(w, r, who, http.StatusForbidden, "missing or stale token: reload the page (a token is good for an hour; the page renews it as it refreshes)")
		return
	}
	status, msg := h.do(r.Context(), who, f)
	if status >= 400 {
		h.refuse(w, r, who, status, msg)
		return
	}
	h.o.Logger.Info("statuspage: action", "who", who, "remote", r.RemoteAddr, "action", f.Get("action"), "args", args(f), "status", status, "result", msg)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
}

// args returns the arguments of f worth logging: all but the token.
func args(f url.Values) string {
	g := url.Values{}
	for k, v := range f {
		if k != "token" && k != "action" {
			g[k] = v
		}
	}
	return g.Encode()
}

// refuse answers r with status and msg, and logs the refusal.
func (h *handler[K]) refuse(w http.ResponseWriter, r *http.Request, who string, status int, msg string) {
	action := r.URL.Query().Get("action") // a GET's
	if r.PostForm != nil {
		action = r.PostForm.Get("action")
	}
	h.o.Logger.Warn("statuspage: action refused", "who", who, "remote", r.RemoteAddr, "method", r.Method, "action", fmt.Sprintf("%.40s", action),
		"args", fmt.Sprintf("%.200s", args(r.PostForm)), "status", status, "result", msg)
	http.Error(w, msg, status)
}

// do carries out the action of form f for who; it returns the answer's
// status and text.
func (h *handler[K]) do(ctx context.Context, who string, f url.Values) (int, string) {
	action := f.Get("action")
	switch action {
	case "pause", "resume", "cap", "remove":
		key, name, status, msg := h.key(f.Get("key"))
		if status != 0 {
			return status, msg
		}
		switch action {
		case "pause":
			return poolAnswer(h.p.Pause(key), fmt.Sprintf("paused channel %s", name))
		case "resume":
			return poolAnswer(h.p.Resume(key), fmt.Sprintf("resumed channel %s", name))
		case "cap":
			n, status, msg := number(f)
			if status != 0 {
				return status, msg
			}
			return poolAnswer(h.p.SetCap(key, n), fmt.Sprintf("set the cap of channel %s to %d", name, n))
		}
		return h.remove(ctx, who, key, name, f.Get("policy"))
	case "workers", "limit":
		n, status, msg := number(f)
		if status != 0 {
			return status, msg
		}
		if action == "workers" {
			return poolAnswer(h.p.SetWorkers(n), fmt.Sprintf("set the workers to %d", n))
		}
		return poolAnswer(h.p.SetLimit(n), fmt.Sprintf("set the in-flight limit to %d", n))
	case "replay", "delete":
		return h.letterAction(ctx, action, f)
	case "":
		return http.StatusBadRequest, "no action: want one of pause, resume, cap, workers, limit, remove, replay, delete"
	}
	return http.StatusBadRequest, fmt.Sprintf("unknown action %.40q: want one of pause, resume, cap, workers, limit, remove, replay, delete", action)
}

// key returns the key of the channel the page prints as s, and s quoted
// for an answer; or a status and message if no channel, or more than one,
// prints so.
func (h *handler[K]) key(s string) (key K, name string, status int, msg string) {
	name = fmt.Sprintf("%.80q", s)
	if s == "" {
		return key, name, http.StatusBadRequest, "no key: name a channel as the page prints it"
	}
	n := 0
	for _, c := range h.p.Stats().Channels {
		if fmt.Sprint(c.Key) == s {
			key, n = c.Key, n+1
		}
	}
	switch n {
	case 0:
		return key, name, http.StatusNotFound, fmt.Sprintf("no channel %s in the pool", name)
	case 1:
		return key, name, 0, ""
	}
	return key, name, http.StatusConflict, fmt.Sprintf("%d channels print as %s: the page cannot tell them apart", n, name)
}

// number reads the form's n, a whole number.
func number(f url.Values) (n int, status int, msg string) {
	s := f.Get("n")
	n, err := strconv.Atoi(s)
	switch {
	case s == "":
		return 0, http.StatusBadRequest, "no n: give a whole number"
	case errors.Is(err, strconv.ErrRange):
		return 0, http.StatusBadRequest, fmt.Sprintf("n %.40q is out of range", s)
	case err != nil:
		return 0, http.StatusBadRequest, fmt.Sprintf("n %.40q is not a whole number", s)
	}
	return n, 0, ""
}

// poolAnswer answers an action the pool carried out (err nil: ok) or
// refused, in its own words.
func poolAnswer(err error, ok string) (int, string) {
	switch {
	case err == nil:
		return http.StatusOK, ok
	case errors.Is(err, smartpool.ErrUnknownKey):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, smartpool.ErrBadLimit):
		return http.StatusBadRequest, err.Error()
	}
	return http.StatusConflict, err.Error()
}

// remove removes the channel key, printed as name, under policy, waiting
// Options.ActionTimeout at most, and lists it with its final stats.
func (h *handler[K]) remove(ctx context.Context, who string, key K, name, policy string) (int, string) {
	var p smartpool.RemovePolicy
	switch policy {
	case "drain":
		p = smartpool.Drain
	case "drop":
		p = smartpool.Drop
	default:
		return http.StatusBadRequest, fmt.Sprintf("policy %.40q: want drain (run what the channel holds) or drop", policy)
	}
	// The removal is waited for on a goroutine of its own, which goes on
	// after ActionTimeout: only a RemoveChannel call that sees the channel's
	// tasks end takes the channel out of the pool (one whose context ended
	// leaves it flagged removing), and so the page lists it as removed when
	// it is. The goroutine ends with the channel's tasks, or at Close.
	type result struct {
		c   smartpool.ChannelStats[K]
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		c, err := h.p.RemoveChannel(context.WithoutCancel(ctx), key, p)
		if err == nil {
			h.noteRemoval(c, start, who, policy)
		}
		done <- result{c, err}
	}()
	timer := time.NewTimer(h.o.ActionTimeout)
	defer timer.Stop()
	var res result
	select {
	case res = <-done:
	case <-timer.C:
		go func() { // log how it ended, for the operator who was told it goes on
			res := <-done
			h.o.Logger.Info("statuspage: removal ended", "who", who, "key", name, "policy", policy, "err", res.err,
				"ran", res.c.Ran, "dropped", res.c.Dropped)
		}()
		return http.StatusAccepted, fmt.Sprintf("removing channel %s (%s): not done after %v; it carries on, flagged removing, and is listed as removed once its tasks ended", name, policy, h.o.ActionTimeout)
	}
	c, err := res.c, res.err
	if err != nil {
		return poolAnswer(err, "")
	}
	return http.StatusOK, fmt.Sprintf("removed channel %s (%s): ran %d, panicked %d, goexited %d, dropped %d, cancelled %d",
		name, policy, c.Ran, c.Panicked, c.Goexited, c.Dropped, c.Cancelled)
}
