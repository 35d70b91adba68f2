package jetstream

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// Connect applies the caller's nats.Options after its own, and Embedded
// passes the sync settings to the server; bad input is refused.
func TestConnectOptionsAndSync(t *testing.T) {
	c, err := Embedded(testCtx(t), EmbeddedOptions{Dir: t.TempDir(), Listen: "127.0.0.1:0", SyncAlways: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if cfg := c.srv.JetStreamConfig(); cfg == nil || !cfg.SyncAlways {
		t.Fatalf("JetStream config %+v: want SyncAlways", cfg)
	}
	d, err := Embedded(testCtx(t), EmbeddedOptions{Dir: t.TempDir(), SyncInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if cfg := d.srv.JetStreamConfig(); cfg == nil || cfg.SyncInterval != time.Second {
		t.Fatalf("JetStream config %+v: want SyncInterval 1s", cfg)
	}
	if _, err := Embedded(testCtx(t), EmbeddedOptions{Dir: t.TempDir(), SyncInterval: -1}); err == nil {
		t.Fatal("a negative SyncInterval accepted")
	}
	w, err := Connect(testCtx(t), c.URL(), Options{NATS: []nats.Option{nats.Name("fleet-7")}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.nc.Opts.Name != "fleet-7" {
		t.Fatalf("connection name %q, want the caller's", w.nc.Opts.Name)
	}
	if s := w.ConnStats(); !s.Connected || s.Disconnects != 0 {
		t.Fatalf("conn stats %+v", s)
	}
}
