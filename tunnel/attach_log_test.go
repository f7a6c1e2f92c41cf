package tunnel

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/hookback/hookback/internal/syncbuf"
)

// TestAttachLogs: while the relay is not there yet the attacher says it is
// waiting, once, at info; only losing a tunnel that was up is a warning.
func TestAttachLogs(t *testing.T) {
	srv := echo(t)
	var control relayAddr // no relay yet: dialling it is refused

	var logs syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ups, _, _ := attach(t, control.get, "s3cret", srv.Listener.Addr().String(), nil, log)

	waitFor(t, "a retry after the first refusal", func() bool { return strings.Contains(logs.String(), "reverse tunnel still down") })
	before := logs.String()
	if n := strings.Count(before, `msg="waiting for the relay"`); n != 1 || !strings.Contains(before, "level=INFO") {
		t.Errorf("want one info line saying it waits for the relay, got %d:\n%s", n, before)
	}
	if strings.Contains(before, "level=WARN") {
		t.Errorf("a relay not there yet is no outage, but warned:\n%s", before)
	}

	r, stopRelay := startRelay(t, "127.0.0.1:0")
	control.set(r.ControlAddr().String())
	waitFor(t, "attached", func() bool { return ups.Load() == 1 })
	control.set("")
	stopRelay()
	waitFor(t, "the outage warned", func() bool { return strings.Contains(logs.String(), "level=WARN") })
	if after := logs.String(); strings.Count(after, "reverse tunnel down: the webhooks fail open") != 1 {
		t.Errorf("want one warning for the outage:\n%s", after)
	}
}
