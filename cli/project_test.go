package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestProjectMode(t *testing.T) {
	proj, err := filepath.Abs(filepath.Join("..", "testdata", "project"))
	if err != nil {
		t.Fatal(err)
	}
	validate := "/upstream/svc/project-system/project-webhook-service/443/validate-batch-tutorial-kubebuilder-io-v1-cronjob"
	tests := []struct {
		name    string
		chdir   string
		args    []string
		want    []string // substrings of stdout
		notWant []string
		wantErr string
	}{
		{name: "PROJECT in the current directory", chdir: proj, want: []string{"name: project-validating-webhook-configuration-dev", validate}, notWant: []string{"/validate-pod-name"}},
		{name: "--project", args: []string{"--project", proj}, want: []string{validate}, notWant: []string{"/validate-pod-name"}},
		{name: "built-ins asked for explicitly", args: []string{"--project", proj, "--webhooks", "pod-name"}, want: []string{validate, "/validate-pod-name"}},
		{name: "--webhook-config wins over the current directory's PROJECT", chdir: proj,
			args: []string{"--webhook-config", filepath.Join(proj, "config", "webhook"), "--upstream", "https://127.0.0.1:9443"},
			want: []string{"/upstream/svc/system/webhook-service/443/validate", "/validate-pod-name"}},
		{name: "--project and --webhook-config", args: []string{"--project", proj, "--webhook-config", proj},
			wantErr: "and --webhook-config: give one"},
		{name: "--project without PROJECT", args: []string{"--project", t.TempDir()}, wantErr: "no PROJECT file there"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.chdir != "" {
				t.Chdir(tt.chdir)
			}
			args := append([]string{"render", "--advertise-address", "192.0.2.10", "--session", "dev", "--state-dir", t.TempDir()}, tt.args...)
			out, _, err := run(t, args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q", w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output has %q", w)
				}
			}
		})
	}
}
