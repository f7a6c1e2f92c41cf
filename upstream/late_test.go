package upstream

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hookback/hookback/internal/syncbuf"
)

// answering serves l with an allowing answer after delay.
func answering(t *testing.T, l net.Listener, delay time.Duration) *http.Server {
	t.Helper()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"uid":"u1"`) {
			http.Error(w, "review garbled: "+string(body), http.StatusBadRequest)
			return
		}
		time.Sleep(delay)
		_, _ = io.WriteString(w, answer("admission.k8s.io/v1", map[string]any{"uid": "u1", "allowed": false, "status": map[string]any{"message": "late no"}}))
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func TestLateAnswer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	answering(t, l, 300*time.Millisecond)
	base, _ := url.Parse("http://" + l.Addr().String())
	got, awaited := make(chan LateAnswer, 1), make(chan LateAnswer, 1)
	f, err := New(Options{Base: base, LateAnswerTimeout: 5 * time.Second, Late: func(a LateAnswer) { got <- a },
		Awaiting: func(a LateAnswer) { awaited <- a }}, "/validate")
	if err != nil {
		t.Fatal(err)
	}
	req := request("admission.k8s.io/v1")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	resp := f.Handle(ctx, req)
	if !resp.Failed() || !strings.Contains(resp.Result.Message, "hookback still waits for the answer") {
		t.Fatalf("response to the apiserver %+v, want a failed call saying the answer is awaited", resp.Result)
	}
	// Told at once that the answer is awaited, before it comes.
	select {
	case a := <-awaited:
		if a.UID != "u1" || a.Answer != nil || a.Err != nil || len(got) != 0 {
			t.Fatalf("awaiting %+v, want review u1 with no answer yet", a)
		}
	default:
		t.Fatal("Handle returned before telling Awaiting")
	}
	// The transport reuses the review's buffer once Handle returns.
	raw := req.Review()
	for i := range raw {
		raw[i] = 'x'
	}
	select {
	case a := <-got:
		if a.Err != nil || a.Response.Allowed || a.Response.Result.Message != "late no" || a.Waited < 300*time.Millisecond {
			t.Fatalf("late answer %+v (err %v), want the upstream's denial, checked", a.Response, a.Err)
		}
		if !strings.Contains(string(a.Review), `"uid":"u1"`) {
			t.Fatalf("late review %q is not the review sent", a.Review)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no late answer reported")
	}
}

func TestRestartWait(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	srv := answering(t, l, 0)
	base, _ := url.Parse("http://" + addr)
	var logs syncbuf.Buffer
	f, err := New(Options{Base: base, Log: slog.New(slog.NewTextHandler(&logs, nil))}, "/validate")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		restart bool
		want    string
	}{
		{"up", false, "late no"},
		{"restarting within the timeout", true, "late no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.restart {
				_ = srv.Close()
				f.client.CloseIdleConnections()
				go func() {
					time.Sleep(400 * time.Millisecond)
					l, err := net.Listen("tcp", addr)
					if err != nil {
						t.Error(err)
						return
					}
					srv = answering(t, l, 0)
				}()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			resp := f.Handle(ctx, request("admission.k8s.io/v1"))
			if resp.Failed() || resp.Result.Message != tt.want {
				t.Fatalf("response %+v, want %q", resp.Result, tt.want)
			}
		})
	}
	if !strings.Contains(logs.String(), "waiting for it to restart") || !strings.Contains(logs.String(), "hookback waited for it") {
		t.Fatalf("log does not say hookback waited:\n%s", logs.String())
	}
}

// TestRestartWaitAnswersBeforeTheDeadline: an upstream that went away and
// does not come back is reported before the apiserver's deadline, so the
// client reads what went wrong rather than a bare timeout.
func TestRestartWaitAnswersBeforeTheDeadline(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := answering(t, l, 0)
	base, _ := url.Parse("http://" + l.Addr().String())
	f, err := New(Options{Base: base, Log: slog.New(slog.DiscardHandler)}, "/validate")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if resp := f.Handle(ctx, request("admission.k8s.io/v1")); resp.Failed() {
		t.Fatalf("first call failed: %+v", resp.Result)
	}
	_ = srv.Close()
	f.client.CloseIdleConnections()
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp := f.Handle(ctx, request("admission.k8s.io/v1"))
	if !resp.Failed() || !strings.Contains(resp.Result.Message, "nothing listens") {
		t.Fatalf("response %+v, want the call failed saying nothing listens", resp.Result)
	}
	if ctx.Err() != nil {
		t.Errorf("answered after the deadline: %v", ctx.Err())
	}
}

func TestNeverUpFailsAtOnce(t *testing.T) {
	addr := closedAddr(t)
	base, _ := url.Parse("http://" + addr)
	f, err := New(Options{Base: base}, "/validate")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp := f.Handle(context.Background(), request("admission.k8s.io/v1"))
	if !resp.Failed() || !strings.Contains(resp.Result.Message, "nothing listens on "+addr) || time.Since(start) > time.Second {
		t.Fatalf("response %+v after %s, want an immediate failure naming %s", resp.Result, time.Since(start), addr)
	}
}
