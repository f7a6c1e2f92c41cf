package session

import (
	"bytes"
	"context"
	"io"
	"os"
	"time"

	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/internal/syncbuf"
	"github.com/hookback/hookback/plan"
)

func TestLoadUserWebhooksMapping(t *testing.T) {
	def := filepath.Join("..", "testdata", "project", "config", "default")
	cfg := plan.Options{Session: "dev", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	tests := []struct {
		name      string
		upstreams []string
		wantErr   string // "" for none
		routes    int
	}{
		{name: "default upstream", upstreams: []string{"https://127.0.0.1:9443"}, routes: 2},
		{name: "rendered webhook service", upstreams: []string{"project-system/project-webhook-service=https://127.0.0.1:9443"}, routes: 2},
		{name: "conversion service only, webhooks without upstream",
			upstreams: []string{"project-system/webhook-service=https://127.0.0.1:9443"},
			wantErr:   "no plan.UserWebhooks.Upstream takes them"},
		{name: "name before the kustomize prefix",
			upstreams: []string{"https://127.0.0.1:9443", "system/webhook-service=https://127.0.0.1:9444"},
			wantErr:   "plan.UserWebhooks.Upstream system/webhook-service=https://127.0.0.1:9444: no webhook or CRD conversion in the manifests sends to Service system/webhook-service; the Services they name (as rendered, kustomize's namespace and namePrefix applied): project-system/project-webhook-service, project-system/webhook-service"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := plan.UserWebhooks{Manifests: []string{def}}
			for _, s := range tt.upstreams {
				up, err := plan.ParseUpstream(s)
				if err != nil {
					t.Fatal(err)
				}
				spec.Upstreams = append(spec.Upstreams, up)
			}
			u, err := loadUser(spec, cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(u.routes) != tt.routes || len(u.manifests.CRDs) != 1 {
				t.Errorf("routes %d, CRDs %d; want %d and 1", len(u.routes), len(u.manifests.CRDs), tt.routes)
			}
		})
	}
}

func TestPermissionsFollowWhatRuns(t *testing.T) {
	proj := filepath.Join("..", "testdata", "project")
	tests := []struct {
		name      string
		manifests []string
		wantCRDs  bool
	}{
		{name: "no manifests", wantCRDs: false},
		{name: "webhook configurations only", manifests: []string{filepath.Join(proj, "config", "webhook")}, wantCRDs: false},
		{name: "with CRDs", manifests: []string{filepath.Join(proj, "config", "default")}, wantCRDs: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			perms, err := plan.Permissions(completed(t, plan.Options{LeaseNamespace: "default", User: plan.UserWebhooks{Manifests: tt.manifests}}))
			if err != nil {
				t.Fatal(err)
			}
			var crds, builtins int
			for _, p := range perms {
				if p.Resource == "customresourcedefinitions" {
					crds++
				}
				if p.Resource == "pods" || p.Resource == "nodes" {
					builtins++
				}
			}
			if (crds > 0) != tt.wantCRDs || builtins != 0 {
				t.Errorf("CRD permissions %d (want some: %v), built-ins' %d (want 0)", crds, tt.wantCRDs, builtins)
			}
		})
	}
}

func TestKeepUpstreamCertRenews(t *testing.T) {
	state, dir := t.TempDir(), filepath.Join(t.TempDir(), "serving-certs")
	ca, _, err := certs.LocalCA(state)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := certs.WriteUpstreamPair(ca, dir, time.Now()); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, "tls.crt"))
	if err != nil {
		t.Fatal(err)
	}
	var logged syncbuf.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// 80 days on: the pair is within its renewal window.
	later := func() time.Time { return time.Now().Add(80 * 24 * time.Hour) }
	go func() {
		defer close(done)
		keepUpstreamCert(ctx, state, dir, time.Millisecond, later, slog.New(slog.NewTextHandler(&logged, nil)))
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logged.String(), "renewed tls.crt and tls.key in "+dir) {
		if time.Now().After(deadline) {
			t.Fatalf("no renewal logged within 10s:\n%s", logged.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	after, err := os.ReadFile(filepath.Join(dir, "tls.crt"))
	if err != nil || bytes.Equal(before, after) {
		t.Fatalf("tls.crt unchanged after a logged renewal (err %v)", err)
	}
}
