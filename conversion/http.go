package conversion

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookback/hookback/internal/admissionhttp"
)

// Webhook is one CRD's conversion webhook as hookback serves it.
type Webhook struct {
	// CRD names the CustomResourceDefinition; Path is where it is served.
	CRD, Path string
	Converter Converter
}

// Options configure NewHTTPHandler.
type Options struct {
	// Log gets one line per review (never the objects); nil discards.
	Log *slog.Logger
	// Metrics, when set, counts reviews and objects.
	Metrics *Metrics
	// Recorder, when set, keeps each review and its answer (--record-dir,
	// the inspector), under the webhook name "convert/" + CRD.
	Recorder admissionhttp.ServedRecorder
}

// Metrics count conversions by CRD and result.
type Metrics struct {
	reviews *prometheus.CounterVec
	objects *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

// NewMetrics registers the conversion metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		reviews: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "hookback", Name: "conversion_reviews_total",
			Help: "ConversionReviews by CRD and result (success, failure, errored, bad_request)."}, []string{"crd", "result"}),
		objects: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "hookback", Name: "conversion_objects_total",
			Help: "Objects sent for conversion, by CRD."}, []string{"crd"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "hookback", Name: "conversion_duration_seconds",
			Help:    "Time to answer one ConversionReview, upstream included.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5}}, []string{"crd"}),
	}
	for _, c := range []prometheus.Collector{m.reviews, m.objects, m.latency} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register conversion metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) observe(crd, result string, objects int, took time.Duration) {
	if m == nil {
		return
	}
	m.reviews.WithLabelValues(crd, result).Inc()
	if result != "bad_request" {
		m.objects.WithLabelValues(crd).Add(float64(objects))
		m.latency.WithLabelValues(crd).Observe(took.Seconds())
	}
}

type handler struct {
	w    Webhook
	opts Options
}

// NewHTTPHandler serves w's ConversionReviews.
func NewHTTPHandler(w Webhook, opts Options) http.Handler {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &handler{w: w, opts: opts}
}

func (h *handler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if r.Method != http.MethodPost {
		rw.Header().Set("Allow", http.MethodPost)
		h.fail(rw, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed: conversion reviews are POSTed")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, admissionhttp.DefaultMaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.fail(rw, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", admissionhttp.DefaultMaxBodyBytes))
			return
		}
		h.fail(rw, http.StatusBadRequest, "read request body: "+err.Error())
		return
	}
	req, err := Decode(body)
	if err != nil {
		h.fail(rw, http.StatusBadRequest, err.Error())
		return
	}
	ctx := r.Context()
	if t := timeoutOf(r); t > 0 {
		req.Timeout = t
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	ans := h.w.Converter.Convert(ctx, req)
	out, result := ans.Body, "success"
	if ans.Failure != "" {
		out, result = FailureBody(req, ans.Failure), "errored"
	} else if bytes.Contains(out, []byte(`"Failure"`)) {
		if a, err := DecodeAnswer(out); err == nil && a.Response != nil && a.Response.Result.Status == "Failure" {
			result, ans.Failure = "failure", a.Response.Result.Message
		}
	}
	rw.Header().Set("Content-Type", "application/json")
	_, _ = rw.Write(out)
	took := time.Since(start)
	h.opts.Metrics.observe(h.w.CRD, result, len(req.Objects), took)
	h.log(req, result, ans, took)
	if h.opts.Recorder != nil {
		h.opts.Recorder.RecordServed(admissionhttp.Served{Webhook: "convert/" + h.w.CRD, Path: h.w.Path, Review: body, Answer: out,
			Start: start, Took: took, Upstream: ans.Upstream})
	}
}

func (h *handler) log(req Request, result string, ans Answer, took time.Duration) {
	attrs := []slog.Attr{
		slog.String("crd", h.w.CRD),
		slog.String("desired_api_version", req.DesiredAPIVersion),
		slog.String("from", fromVersions(req.Objects)),
		slog.Int("objects", len(req.Objects)),
		slog.String("result", result),
		slog.Duration("latency", took),
	}
	if ans.Upstream > 0 {
		attrs = append(attrs, slog.Duration("upstream", ans.Upstream), slog.Duration("own", took-ans.Upstream))
	}
	if ans.Failure != "" {
		attrs = append(attrs, slog.String("reason", ans.Failure))
	}
	h.opts.Log.LogAttrs(context.Background(), slog.LevelInfo, "conversion", attrs...)
}

// fromVersions lists the distinct apiVersions converted from.
func fromVersions(objs []Object) string {
	var seen []string
	for _, o := range objs {
		if len(seen) < 4 && !slices.Contains(seen, o.APIVersion) {
			seen = append(seen, o.APIVersion)
		}
	}
	return strings.Join(seen, ",")
}

func (h *handler) fail(rw http.ResponseWriter, code int, msg string) {
	h.opts.Metrics.observe(h.w.CRD, "bad_request", 0, 0)
	h.opts.Log.Warn("rejected conversion request", "crd", h.w.CRD, "status", code, "error", msg)
	http.Error(rw, msg, code)
}

// timeoutOf is the apiserver's ?timeout=, zero when absent or bad.
func timeoutOf(r *http.Request) time.Duration {
	t, err := time.ParseDuration(r.URL.Query().Get("timeout"))
	if err != nil || t <= 0 {
		return 0
	}
	return t
}
