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
