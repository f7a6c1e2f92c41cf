package upstream

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hookback/hookback/admission"
)

func TestCompare(t *testing.T) {
	addX := admission.PatchOp{Op: "add", Path: "/metadata/labels/x", Value: "1"}
	addY := admission.PatchOp{Op: "add", Path: "/metadata/labels/y", Value: "2"}
	tests := []struct {
		name            string
		local, deployed admission.Response
		want            []string
	}{
		{"both allow", admission.Allowed(""), admission.Allowed(""), nil},
		{"decision", admission.Allowed(""), admission.Denied("no"), []string{"decision: yours allowed, deployed denied", `message: yours "", deployed "no"`}},
		{"message", admission.Denied("a"), admission.Denied("b"), []string{`message: yours "a", deployed "b"`}},
		{"patch order normalised", admission.Patched("", addX, addY), admission.Patched("", addY, addX), nil},
		{"patch differs by path, values never shown", admission.Patched("", addX), admission.Patched("", addY),
			[]string{"patch: yours [add /metadata/labels/x], deployed [add /metadata/labels/y]"}},
		{"failed call", admission.CallFailed(errors.New("down")), admission.Allowed(""), []string{"decision: yours failed, deployed allowed", `message: yours "down", deployed ""`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compare(tt.local, tt.deployed)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("Compare = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestShadowAlwaysAllows(t *testing.T) {
	var got ShadowResult
	s := &Shadow{
		Local:    admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Denied("mine says no") }),
		Deployed: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Allowed("") }),
		Report:   func(r ShadowResult) { got = r },
	}
	resp := s.Handle(context.Background(), request("admission.k8s.io/v1"))
	if !resp.Allowed || len(resp.Patch) != 0 || resp.Failed() {
		t.Fatalf("shadow answered %+v: want allowed, no patch", resp)
	}
	if got.Local.Allowed || !got.Deployed.Allowed || len(got.Differences) == 0 {
		t.Fatalf("report %+v: want both answers and their difference", got)
	}
}

func TestShadowTarget(t *testing.T) {
	tests := []struct {
		name, url, path, want, err string
	}{
		{name: "URL without path gets the webhook's", url: "https://127.0.0.1:9443", path: "/validate", want: "https://127.0.0.1:9443/validate"},
		{name: "URL with a path is used as is", url: "https://127.0.0.1:9443/check", path: "/validate", want: "https://127.0.0.1:9443/check"},
		{name: "http on loopback", url: "http://127.0.0.1:8080", path: "/v", want: "http://127.0.0.1:8080/v"},
		{name: "http elsewhere refused", url: "http://192.0.2.1", path: "/v", err: "plain http only on loopback"},
		{name: "not a URL", url: "webhooks", path: "/v", err: "want NAMESPACE/SERVICE[:PORT] or an https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewShadowTarget(ShadowTarget{URL: tt.url}, tt.path, Options{})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || f.target != tt.want {
				t.Fatalf("target %v (%v), want %s", f, err, tt.want)
			}
		})
	}
}

// TestShadowTargetFailuresNameIt: a deployed webhook that fails is named
// as the deployed webhook, with --shadow-ca for its certificate, never
// as "your webhook" or --upstream-ca.
func TestShadowTargetFailuresNameIt(t *testing.T) {
	closed := closedAddr(t)
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer tlsSrv.Close()
	tests := []struct{ name, url, want string }{
		{name: "connection refused", url: "http://" + closed, want: "nothing listens on " + closed + ": is the deployed webhook " + closed + " running?"},
		{name: "unknown certificate authority", url: tlsSrv.URL, want: "deployed webhook " + strings.TrimPrefix(tlsSrv.URL, "https://") + " has a certificate hookback does not trust: pass --shadow-ca"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := NewShadowTarget(ShadowTarget{URL: tc.url}, "/validate", Options{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if resp := f.Handle(ctx, request("admission.k8s.io/v1")); !strings.Contains(resp.Result.Message, tc.want) {
				t.Errorf("message %q, want %q", resp.Result.Message, tc.want)
			}
		})
	}
}
