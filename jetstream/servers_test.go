package jetstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"
)

// externalServer starts the nats-server installed on this machine (the one
// SMARTPOOL_NATS_SERVER names, or nats-server on PATH, such as Debian's
// package) with JetStream on a loopback port, and returns a client of it.
// It skips the test, saying why, where none is installed.
func externalServer(t testing.TB) *Client {
	t.Helper()
	bin := os.Getenv("SMARTPOOL_NATS_SERVER")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("nats-server"); err != nil {
			t.Skip("no nats-server installed (apt-get install nats-server, or set SMARTPOOL_NATS_SERVER): tested against the embedded server only")
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "-js", "-sd", t.TempDir(), "-a", "127.0.0.1", "-p", fmt.Sprint(port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	var c *Client
	until(t, "the external nats-server answers", func() bool {
		c, err = Connect(testCtx(t), fmt.Sprintf("nats://127.0.0.1:%d", port), Options{})
		return err == nil
	})
	t.Cleanup(func() { c.Close() })
	t.Logf("%s: nats-server %s", bin, c.nc.ConnectedServerVersion())
	return c
}

// Ten tasks that fail with Permanent are dead-lettered once each and never
// delivered again, on the embedded server and on the oldest server the
// channel supports that is at hand (Debian's nats-server 2.9.10, which
// ignores a termination that carries a reason).
func TestPermanentDeadLetteredOnce(t *testing.T) {
	for _, server := range []string{"embedded", "installed nats-server"} {
		t.Run(server, func(t *testing.T) {
			var c *Client
			if server == "embedded" {
				c = embedded(t, t.TempDir(), false)
			} else {
				c = externalServer(t)
			}
			var runs atomic.Int64
			reg := NewRegistry()
			if err := reg.Handle("bad", func(context.Context, []byte) error {
				runs.Add(1)
				return Permanent(errors.New("cannot be done"))
			}); err != nil {
				t.Fatal(err)
			}
			dead := make(chan DeadLetter, 100)
			ch, err := c.Channel(testCtx(t), "perm", reg, ChannelOptions{AckWait: fastAck, OnDeadLetter: func(d DeadLetter) { dead <- d }})
			if err != nil {
				t.Fatal(err)
			}
			onePool(t, ch, 2)
			publishN(t, c, "perm", "bad", "p", 10)
			for range 10 {
				recv(t, dead, "a dead letter")
			}
			// No event marks a redelivery that does not come: watch for
			// five AckWaits, in which a message not terminated would
			// come back several times.
			window := time.NewTimer(5 * fastAck)
			defer window.Stop()
			extra := 0
		watch:
			for {
				select {
				case <-dead:
					extra++
				case <-window.C:
					break watch
				}
			}
			n, err := c.DeadLetterCount(testCtx(t), "perm")
			if err != nil {
				t.Fatal(err)
			}
			s := ch.Stats()
			t.Logf("runs %d, dead letters %d (+%d after the first ten), kept %d; %+v", runs.Load(), 10+extra, extra, n, s)
			if runs.Load() != 10 || extra != 0 || n != 10 || s.Redelivered != 0 {
				t.Fatalf("runs %d, dead-lettered %d, kept %d, redelivered %d: want 10, 10, 10, 0", runs.Load(), 10+extra, n, s.Redelivered)
			}
		})
	}
}

// versionAtLeast reads the versions servers report.
func TestVersionAtLeast(t *testing.T) {
	for _, c := range []struct {
		s    string
		want bool
	}{{"2.9.10", false}, {"2.8.4", false}, {"2.10.3", false}, {"2.10.4", true}, {"2.11.0-beta.2", true}, {"3.0.0", true}, {"junk", true}} {
		if got := versionAtLeast(c.s, termReasonServer); got != c.want {
			t.Errorf("versionAtLeast(%q, 2.10.4) = %v, want %v", c.s, got, c.want)
		}
	}
	if versionAtLeast("2.8.4", minServer) {
		t.Error("2.8.4 accepted as at least 2.9.0")
	}
}
