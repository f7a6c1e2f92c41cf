package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"

	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/internal/syncbuf"
)

// hostileLimits are short, so the slow cases end quickly.
var hostileLimits = Limits{ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: 5 * time.Second,
	WriteTimeout: 6 * time.Second, IdleTimeout: 2 * time.Second}

// bigBodyLimits are the defaults': the big-bodies case checks the body cap
// and memory, and on a loaded two-core machine under the race detector
// eight 9 MB bodies can take longer than hostileLimits' read timeout, which
// would answer 400 instead of the 413 under test.
var bigBodyLimits = Limits{}

// startHostile serves pod-name and pod-lifespan, the real built-ins, on a
// real TLS listener with hostileLimits.
func startHostile(t *testing.T) (addr string, logs *syncbuf.Buffer) {
	t.Helper()
	return startHostileWith(t, hostileLimits)
}

func startHostileWith(t *testing.T, limits Limits) (addr string, logs *syncbuf.Buffer) {
	t.Helper()
	crt, err := certs.NewSelfSigned(context.Background(), certs.TLSOptions{StateDir: t.TempDir(), Host: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(crt.Stop)
	hooks, err := webhooks.Build([]string{webhooks.NamePodName, webhooks.NamePodLifespan}, webhooks.DefaultOptions(),
		webhooks.Deps{Recorder: func(string) events.EventRecorder { return &events.FakeRecorder{} }})
	if err != nil {
		t.Fatal(err)
	}
	logs = new(syncbuf.Buffer)
	s, err := NewServer(ServerOptions{Address: "127.0.0.1:0", HealthAddress: "127.0.0.1:0", TLS: crt.TLSConfig(),
		Log: slog.New(slog.NewTextHandler(logs, nil)), Metrics: NewMetrics(), Webhooks: hooks, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	return s.Addr().String(), logs
}

// review is testdata's pod CREATE with edit applied to its decoded form.
func review(t *testing.T, edit func(r map[string]any)) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "admission", "pod-create.v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(r)
	}
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func request(r map[string]any) map[string]any { return r["request"].(map[string]any) }

type hostileCase struct {
	name        string
	method      string
	path        string // default /validate-pod-name
	contentType string // default application/json
	header      http.Header
	body        []byte
	wantCode    int
	wantText    string // in the body
	h2Err       string // over HTTP/2, the client's error instead
}

func hostileCases(t *testing.T) []hostileCase {
	nested := strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)
	return []hostileCase{
		{name: "valid review (control)", body: review(t, nil), wantCode: 200, wantText: `"allowed":true`},
		{name: "valid review, mutating (control)", path: webhooks.PathPodLifespan, body: review(t, nil), wantCode: 200, wantText: `"patchType":"JSONPatch"`},
		{name: "empty body", wantCode: 400, wantText: "empty body"},
		{name: "whitespace body", body: []byte(" \n\t "), wantCode: 400, wantText: "empty body"},
		{name: "truncated JSON", body: review(t, nil)[:120], wantCode: 400, wantText: "decode AdmissionReview"},
		{name: "not JSON", body: []byte("\x00\x01\x02binary"), wantCode: 400, wantText: "decode AdmissionReview"},
		{name: "top-level array", body: []byte(`[1,2,3]`), wantCode: 400, wantText: "decode AdmissionReview"},
		{name: "deeply nested JSON in the object", body: []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","object":` +
			nested + `}}`), wantCode: 400, wantText: "decode AdmissionReview"},
		{name: "9 MB body", body: bytes.Repeat([]byte("x"), 9<<20), wantCode: 413, wantText: "larger than"},
		{name: "wrong apiVersion", body: review(t, func(r map[string]any) { r["apiVersion"] = "admission.k8s.io/v2" }), wantCode: 400, wantText: "unsupported apiVersion"},
		{name: "wrong kind", body: review(t, func(r map[string]any) { r["kind"] = "ConfigMap" }), wantCode: 400, wantText: "unsupported kind"},
		{name: "no request", body: review(t, func(r map[string]any) { delete(r, "request") }), wantCode: 400, wantText: "no request"},
		{name: "request is null", body: review(t, func(r map[string]any) { r["request"] = nil }), wantCode: 400, wantText: "no request"},
		{name: "missing uid", body: review(t, func(r map[string]any) { delete(request(r), "uid") }), wantCode: 400, wantText: "no uid"},
		{name: "uid of the wrong type", body: review(t, func(r map[string]any) { request(r)["uid"] = 42 }), wantCode: 400, wantText: "decode AdmissionReview"},
		{name: "object of the wrong kind for the path", body: review(t, func(r map[string]any) {
			rq := request(r)
			rq["kind"] = map[string]any{"group": "", "version": "v1", "kind": "Node"}
			rq["resource"] = map[string]any{"group": "", "version": "v1", "resource": "nodes"}
			rq["object"] = map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "n"}}
		}), wantCode: 200, wantText: `"allowed":true`},
		{name: "object that is not an object", body: review(t, func(r map[string]any) { request(r)["object"] = 42 }), wantCode: 200, wantText: `"code":400`},
		// A mutating built-in leaves what it cannot read as it is.
		{name: "object that is a string", path: webhooks.PathPodLifespan, body: review(t, func(r map[string]any) { request(r)["object"] = "pod" }), wantCode: 200, wantText: `"allowed":true,"status"`},
		{name: "unknown path", path: "/validate-nothing", body: review(t, nil), wantCode: 404, wantText: "served paths"},
		{name: "GET", method: http.MethodGet, wantCode: 405, wantText: "POST"},
		{name: "PUT", method: http.MethodPut, body: review(t, nil), wantCode: 405, wantText: "POST"},
		{name: "form content type", contentType: "application/x-www-form-urlencoded", body: []byte("a=b"), wantCode: 415, wantText: "application/json"},
		{name: "no content type", contentType: "-", body: review(t, nil), wantCode: 415, wantText: "application/json"},
		{name: "malformed content type", contentType: "application/json; =", body: review(t, nil), wantCode: 415, wantText: "application/json"},
		// Over HTTP/2 the client itself refuses: the server advertised the cap.
		{name: "headers over the cap", header: http.Header{"X-Big": {strings.Repeat("h", 100<<10)}}, body: review(t, nil), wantCode: 431,
			h2Err: "larger than peer's advertised limit"},
		{name: "bad timeout parameter is ignored", path: webhooks.PathPodName + "?timeout=soon", body: review(t, nil), wantCode: 200, wantText: `"allowed":true`},
	}
}

// TestHostileRequests sends each case over HTTP/2 and HTTP/1.1: each gets
// its documented status, a valid review is answered after every one, and
// the heap is back near where it started once they are done.
func TestHostileRequests(t *testing.T) {
	addr, logs := startHostile(t)
	before := heapAfterGC()
	for _, proto := range []string{"h2", "http/1.1"} {
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{proto}}, ForceAttemptHTTP2: proto == "h2"}}
		for _, tc := range hostileCases(t) {
			t.Run(proto+"/"+tc.name, func(t *testing.T) {
				if proto == "h2" && tc.h2Err != "" {
					if _, err := client.Do(newRequest(t, addr, tc)); err == nil || !strings.Contains(err.Error(), tc.h2Err) {
						t.Fatalf("err = %v, want %q", err, tc.h2Err)
					}
					stillServes(t, addr)
					return
				}
				code, body, gotProto := send(t, client, addr, tc)
				if tc.wantCode != 431 && gotProto != map[string]string{"h2": "HTTP/2.0", "http/1.1": "HTTP/1.1"}[proto] {
					t.Fatalf("served over %s, want %s", gotProto, proto)
				}
				if code != tc.wantCode || !strings.Contains(body, tc.wantText) {
					t.Fatalf("got %d %.300q, want %d containing %q", code, body, tc.wantCode, tc.wantText)
				}
				stillServes(t, addr)
			})
		}
		client.CloseIdleConnections()
	}
	t.Run("slow headers are cut at ReadHeaderTimeout", func(t *testing.T) { slowHeaders(t, addr) })
	t.Run("slow body is cut at ReadTimeout", func(t *testing.T) { slowBody(t, addr) })
	t.Run("client that never reads the answers", func(t *testing.T) { neverReads(t, addr) })
	t.Run("eight 9 MB bodies at once", func(t *testing.T) {
		big, _ := startHostileWith(t, bigBodyLimits)
		bigBodies(t, big, 8, "h2")
		bigBodies(t, big, 8, "http/1.1")
	})
	t.Run("plain HTTP on the TLS port", func(t *testing.T) { plainHTTP(t, addr) })
	t.Run("not TLS at all", func(t *testing.T) { garbageTLS(t, addr) })
	if after := heapAfterGC(); after > before+16<<20 {
		t.Errorf("live heap grew from %d to %d bytes over the hostile run", before, after)
	}
	if strings.Contains(logs.String(), "nginx") {
		t.Errorf("a log line carries the object body:\n%s", logs.String())
	}
}

func send(t *testing.T, client *http.Client, addr string, tc hostileCase) (int, string, string) {
	t.Helper()
	req := newRequest(t, addr, tc)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), resp.Proto
}

func newRequest(t *testing.T, addr string, tc hostileCase) *http.Request {
	t.Helper()
	method, path, ct := tc.method, tc.path, tc.contentType
	if method == "" {
		method = http.MethodPost
	}
	if path == "" {
		path = webhooks.PathPodName
	}
	req, err := http.NewRequest(method, "https://"+addr+path, bytes.NewReader(tc.body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range tc.header {
		req.Header[k] = v
	}
	switch ct {
	case "":
		req.Header.Set("Content-Type", "application/json")
	case "-":
	default:
		req.Header.Set("Content-Type", ct)
	}
	return req
}

// stillServes answers a valid review on a new connection.
func stillServes(t *testing.T, addr string) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer client.CloseIdleConnections()
	if code, body, _ := send(t, client, addr, hostileCase{body: review(t, nil)}); code != 200 || !strings.Contains(body, `"allowed":true`) {
		t.Fatalf("after the case, a valid review got %d %q", code, body)
	}
}

func dialTLS(t *testing.T, addr string) *tls.Conn {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedWithin reads until the server closes c, failing past limit.
func closedWithin(t *testing.T, c net.Conn, limit time.Duration) string {
	t.Helper()
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(limit))
	got, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("connection still open after %s", time.Since(start))
	}
	return string(got)
}

func slowHeaders(t *testing.T, addr string) {
	c := dialTLS(t, addr)
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\n", webhooks.PathPodName) // and never the blank line
	closedWithin(t, c, 5*time.Second)
	stillServes(t, addr)
}

func slowBody(t *testing.T, addr string) {
	c := dialTLS(t, addr)
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"a\":", webhooks.PathPodName)
	got := closedWithin(t, c, 15*time.Second)
	if got != "" && !strings.Contains(got, " 400 ") {
		t.Errorf("answer to a body cut by ReadTimeout: %q", got)
	}
	stillServes(t, addr)
}

// neverReads pipelines many requests whose answers it never reads, then
// hangs up; the server must not be stuck on its writes.
func neverReads(t *testing.T, addr string) {
	c := dialTLS(t, addr)
	req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		webhooks.PathPodLifespan, len(review(t, nil)), review(t, nil))
	w := bufio.NewWriter(c)
	_ = c.SetWriteDeadline(time.Now().Add(8 * time.Second))
	// Bounded by count and by the write deadline: the loop ends once the
	// server, blocked on answers nobody reads, stops reading requests.
	for range 20000 {
		if _, err := w.WriteString(req); err != nil {
			break // the server stopped reading: its WriteTimeout or ours
		}
	}
	_ = w.Flush()
	stillServes(t, addr)
	c.Close()
	stillServes(t, addr)
}

func plainHTTP(t *testing.T, addr string) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", webhooks.PathPodName)
	if got := closedWithin(t, c, 5*time.Second); !strings.Contains(got, "400") || !strings.Contains(got, "HTTPS") {
		t.Errorf("plain HTTP got %q, want a 400 saying HTTPS", got)
	}
	stillServes(t, addr)
}

func garbageTLS(t *testing.T, addr string) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = c.Write(bytes.Repeat([]byte{0x16, 0x03, 0x01, 0xff, 0xff}, 100))
	closedWithin(t, c, 5*time.Second)
	stillServes(t, addr)
}

// bigBodies sends n bodies over the cap at once. Over HTTP/2 each gets its
// 413 (the client stops sending when the answer arrives). Over HTTP/1.1 the
// server answers 413, stops reading and closes the connection after a
// grace period: a client still sending then may see its write reset before
// it reads the answer, which is the cap working, so a reset counts too.
func bigBodies(t *testing.T, addr string, n int, proto string) {
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{proto}}, ForceAttemptHTTP2: proto == "h2"}}
	defer client.CloseIdleConnections()
	type result struct {
		code int
		err  error
	}
	results := make(chan result, n)
	body := bytes.Repeat([]byte("x"), 9<<20)
	for range n {
		go func() {
			resp, err := client.Do(newRequest(t, addr, hostileCase{body: body}))
			if err != nil {
				results <- result{err: err}
				return
			}
			resp.Body.Close()
			results <- result{code: resp.StatusCode}
		}()
	}
	for range n {
		r := <-results
		reset := r.err != nil && proto == "http/1.1" && (errors.Is(r.err, syscall.ECONNRESET) || errors.Is(r.err, syscall.EPIPE))
		if r.code != http.StatusRequestEntityTooLarge && !reset {
			t.Errorf("status %d (%v), want 413", r.code, r.err)
		}
	}
	stillServes(t, addr)
}

func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
