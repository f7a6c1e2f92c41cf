package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookback/hookback/server"
)

// TestRenderCommandGolden runs `hookback render` as a user would and compares
// its stdout with testdata/golden/render-cli.yaml. The CA is made fresh in a
// temp dir, so its bundle is replaced by a placeholder before comparing.
func TestRenderCommandGolden(t *testing.T) {
	state := t.TempDir()
	var out, errOut bytes.Buffer
	args := []string{"hookback", "render", "--advertise-address", "192.0.2.10", "--port", "9443",
		"--session", "dev", "--state-dir", state, "--webhooks", "all"}
	if err := newApp(&out, &errOut).Run(args); err != nil {
		t.Fatalf("render: %v\n%s", err, errOut.String())
	}
	ca, err := server.LoadOrCreateCA(state, "")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(out.String(), ca.Bundle(), "CA-BUNDLE")
	if !strings.Contains(got, "CA-BUNDLE") {
		t.Fatalf("rendered output lacks the state dir's CA bundle:\n%s", got)
	}
	golden := filepath.Join("testdata", "golden", "render-cli.yaml")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != got {
		t.Errorf("hookback render differs from %s (UPDATE_GOLDEN=1 go test -run TestRenderCommandGolden .):\n%s", golden, got)
	}
}

func TestRenderCommandRefusesUnknownWebhook(t *testing.T) {
	var out, errOut bytes.Buffer
	err := newApp(&out, &errOut).Run([]string{"hookback", "render", "--advertise-address", "192.0.2.10", "--state-dir", t.TempDir(), "--webhooks", "pod-nmae"})
	if err == nil || !strings.Contains(err.Error(), `unknown webhook "pod-nmae"`) {
		t.Errorf("err = %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("printed output despite the error: %s", out.String())
	}
}

func TestSessionNames(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Alice@Laptop.local", "alice-laptop-local"},
		{"ci_runner-42", "ci-runner-42"},
		{strings.Repeat("a", 60), strings.Repeat("a", 40)},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := sanitizeSession(tc.in); got != tc.want {
				t.Errorf("sanitizeSession(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestReplay(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    []string
		wantErr string
	}{
		{name: "validating webhook denies", args: []string{"--webhook", "pod-name", "testdata/webhook/pod-name/v1-create-banned-name.json"},
			want: []string{`"allowed": false`, `pod name contains \"offensive\"`}},
		{name: "mutating webhook prints the decoded patch", args: []string{"--webhook", "pod-lifespan", "testdata/webhook/pod-lifespan/v1-create-3.json"},
			want: []string{`"patchType": "JSONPatch"`, "patch:\n[", `"path": "/spec/tolerations/-"`}},
		{name: "events are shown", args: []string{"--webhook", "pod-lifespan", "testdata/webhook/pod-lifespan/v1-create-invalid.json"},
			want: []string{"event: Warning LifespanInvalid"}},
		{name: "unknown webhook", args: []string{"--webhook", "nope", "testdata/webhook/pod-name/v1-create-allowed.json"}, wantErr: `unknown webhook "nope"`},
		{name: "not a review", args: []string{"--webhook", "pod-name", "testdata/admission/garbage.json"}, wantErr: "refused the review (HTTP 400)"},
		{name: "missing file", args: []string{"--webhook", "pod-name", "testdata/nope.json"}, wantErr: "open review"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := newApp(&out, &errOut).Run(append([]string{"hookback", "replay"}, tc.args...))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("replay: %v\n%s", err, errOut.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestCACommand(t *testing.T) {
	state := t.TempDir()
	var pemOut, bundleOut, errOut bytes.Buffer
	if err := newApp(&pemOut, &errOut).Run([]string{"hookback", "ca", "--state-dir", state}); err != nil {
		t.Fatal(err)
	}
	if err := newApp(&bundleOut, &errOut).Run([]string{"hookback", "ca", "--state-dir", state, "--bundle"}); err != nil {
		t.Fatal(err)
	}
	ca, err := server.LoadOrCreateCA(state, "")
	if err != nil {
		t.Fatal(err)
	}
	if pemOut.String() != string(ca.CertPEM) || strings.TrimSpace(bundleOut.String()) != ca.Bundle() {
		t.Errorf("ca printed %q / %q, want the state dir's CA", pemOut.String(), bundleOut.String())
	}
}
