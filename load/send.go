package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Kinds of outcome, as the report counts them. Denied is an answer (a
// webhook or policy said no), not an error; every other kind but OK is.
const (
	KindOK          = "ok"
	KindDenied      = "denied"
	KindTimeout     = "timeout"
	KindThrottled   = "throttled"
	KindServerError = "server_error"
	KindClientError = "client_error"
	KindTransport   = "transport"
)

// Kinds lists them in the report's order.
var Kinds = []string{KindOK, KindDenied, KindTimeout, KindThrottled, KindServerError, KindClientError, KindTransport}

// isError says whether a kind counts toward the error rate.
func isError(kind string) bool { return kind != KindOK && kind != KindDenied }

// maxStatusBytes bounds what is read of an error's body (a Status).
const maxStatusBytes = 64 << 10

// classify names the outcome of an answer: the status code and, for an
// error, the Status the apiserver sent (a webhook's denial, a timeout).
func classify(code int, body []byte) string {
	switch {
	case code >= 200 && code < 300:
		return KindOK
	case code == http.StatusTooManyRequests:
		return KindThrottled
	case code == http.StatusGatewayTimeout || code == http.StatusRequestTimeout:
		return KindTimeout
	}
	var st struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(body, &st)
	switch {
	case st.Reason == "Timeout" || strings.HasPrefix(st.Message, "Timeout:"):
		return KindTimeout
	case code >= 500:
		return KindServerError
	case strings.Contains(st.Message, "denied the request") || strings.Contains(st.Message, "denied request"):
		// A webhook's ("admission webhook %q denied the request") or a
		// ValidatingAdmissionPolicy's ("... denied request").
		return KindDenied
	}
	return KindClientError
}

// stepStats gathers one step's answers from the requests' goroutines.
type stepStats struct {
	mu      sync.Mutex
	end     time.Time
	lat     []time.Duration
	kinds   map[string]int
	sent    int
	inTime  int
	skipped int
	// firstError is one message per error kind, to say what went wrong.
	firstError map[string]string
}

func newStepStats(end time.Time) *stepStats {
	return &stepStats{end: end, kinds: map[string]int{}, firstError: map[string]string{}}
}

func (s *stepStats) add(took time.Duration, kind, msg string) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lat = append(s.lat, took)
	s.kinds[kind]++
	if !now.After(s.end) {
		s.inTime++
	}
	if isError(kind) && s.firstError[kind] == "" {
		s.firstError[kind] = msg
	}
}

func (s *stepStats) skip() {
	s.mu.Lock()
	s.skipped++
	s.mu.Unlock()
}

func (s *stepStats) sending() {
	s.mu.Lock()
	s.sent++
	s.mu.Unlock()
}

// sender POSTs targets with an http.Client that does not retry and has
// no client-side rate limit (rest.HTTPClientFor's): what the apiserver
// answers is what is counted.
type sender struct {
	client  *http.Client
	base    string
	timeout time.Duration
}

// send makes one request and counts its answer in st; a request cut by
// ctx (Ctrl-C) is not counted.
func (s sender) send(ctx context.Context, t *target, st *stepStats) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+t.path, bytes.NewReader(t.body))
	if err != nil {
		st.add(0, KindTransport, err.Error())
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		took := time.Since(start)
		switch {
		case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
			st.add(took, KindTimeout, "no answer within "+s.timeout.String())
		case ctx.Err() == nil:
			st.add(took, KindTransport, err.Error())
		}
		return
	}
	var body []byte
	if resp.StatusCode >= 300 {
		body, _ = io.ReadAll(io.LimitReader(resp.Body, maxStatusBytes))
	} else {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxStatusBytes))
	}
	resp.Body.Close()
	took := time.Since(start)
	kind := classify(resp.StatusCode, body)
	st.add(took, kind, statusMessage(resp.StatusCode, body))
}

// statusMessage is the message of a Status, never the object: a dry-run
// create answers with the object, but only errors are read.
func statusMessage(code int, body []byte) string {
	var st struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &st) == nil && st.Message != "" {
		return st.Message
	}
	return http.StatusText(code)
}
