package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	cradmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	hookback "github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/server"
)

// decide is the one decision every server makes: decode the pod, deny a
// name with a banned word, allow the rest.
func decide(raw []byte) (allowed bool, msg string, err error) {
	var pod corev1.Pod
	if err := json.Unmarshal(raw, &pod); err != nil {
		return false, "", err
	}
	if strings.Contains(pod.Name, "offensive") {
		return false, "pod name contains \"offensive\"", nil
	}
	return true, "", nil
}

// runServer serves path /validate on a free loopback port, prints the
// address on stdout, and serves until SIGTERM; each SIGUSR1 prints its
// runtime stats (answerStats).
func runServer(kind, dir string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	answerStats(ctx)
	if path := os.Getenv("BENCH_CPUPROFILE"); path != "" {
		stopProfile, err := startProfile(path + "." + kind)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	if path := os.Getenv("BENCH_MEMPROFILE"); path != "" {
		runtime.MemProfileRate = 4 << 10 // every 4 KiB allocated: a request's garbage is a few samples
		defer writeHeapProfile(path + "." + kind)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		return err
	}
	tlsConf := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
	switch kind {
	case "hookback":
		ln.Close()
		return serveHookback(ctx, addr, tlsConf)
	case "controller-runtime":
		ln.Close()
		return serveControllerRuntime(ctx, addr, dir)
	case "bare":
		return serveBare(ctx, ln, tlsConf)
	}
	return fmt.Errorf("unknown server %q", kind)
}

// writeHeapProfile writes what was allocated where since the start
// (go tool pprof -sample_index=alloc_space).
func writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		log.Print(err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		log.Print(err)
	}
}

// startProfile writes a CPU profile to path until stop.
func startProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// serveHookback is hookback's server.Server with its default limits,
// metrics and one log line per admission (to a discarded writer).
func serveHookback(ctx context.Context, addr string, tlsConf *tls.Config) error {
	h := hookback.HandlerFunc(func(_ context.Context, req hookback.Request) hookback.Response {
		ok, msg, err := decide(req.Object.Raw)
		switch {
		case err != nil:
			return hookback.Errored(http.StatusBadRequest, err)
		case !ok:
			return hookback.Denied(msg)
		}
		return hookback.Allowed("")
	})
	srv, err := server.NewServer(server.ServerOptions{Address: addr, HealthAddress: "127.0.0.1:0", TLS: tlsConf,
		Webhooks: []hookback.Webhook{{Name: "bench", Path: "/validate", Handler: h}},
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: server.NewMetrics()})
	if err != nil {
		return err
	}
	fmt.Println(addr)
	return srv.Start(ctx)
}

// serveControllerRuntime is controller-runtime's webhook.Server with its
// defaults, reading the same certificate from dir, and a logger that
// discards, as a program using controller-runtime sets one (kubebuilder's
// main does). Without it, controller-runtime's delegating logger keeps every
// request's WithValues until a logger is set or 30 s have passed
// (kubernetes-sigs/controller-runtime#1122, #1444): a run measured leaking,
// tens of MiB that made it collect a tenth as often as the others.
func serveControllerRuntime(ctx context.Context, addr, dir string) error {
	crlog.SetLogger(logr.Discard())
	_, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	srv := crwebhook.NewServer(crwebhook.Options{Host: "127.0.0.1", Port: p, CertDir: dir, CertName: "tls.crt", KeyName: "tls.key"})
	srv.Register("/validate", &cradmission.Webhook{Handler: cradmission.HandlerFunc(func(_ context.Context, req cradmission.Request) cradmission.Response {
		ok, msg, err := decide(req.Object.Raw)
		switch {
		case err != nil:
			return cradmission.Errored(http.StatusBadRequest, err)
		case !ok:
			return cradmission.Denied(msg)
		}
		return cradmission.Allowed("")
	})})
	fmt.Println(addr)
	return srv.Start(ctx)
}

// serveBare is net/http with nothing but the handler: the floor.
func serveBare(ctx context.Context, ln net.Listener, tlsConf *tls.Config) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/validate", bareHandler)
	s := &http.Server{Handler: mux, TLSConfig: tlsConf, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); _ = s.Close() }()
	fmt.Println(ln.Addr().String())
	if err := s.ServeTLS(ln, "", ""); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// bareHandler gives the same answer with nothing around it: the floor.
func bareHandler(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(io.LimitReader(r.Body, 7<<20)).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	ok, msg, err := decide(review.Request.Object.Raw)
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: ok && err == nil}
	if msg != "" {
		resp.Result = &metav1.Status{Message: msg}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
}
