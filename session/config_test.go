package session

import (
	"slices"
	"strings"
	"testing"
)

func TestSelect(t *testing.T) {
	valid := []string{"a", "b", "c"}
	tests := []struct {
		name string
		list []string
		want []string
		err  string
	}{
		{name: "all", list: []string{"all"}, want: valid},
		{name: "all in any case, with others", list: []string{"b", " ALL "}, want: valid},
		{name: "none", list: []string{"none"}, want: nil},
		{name: "empty", list: []string{""}, want: nil},
		{name: "names trimmed, deduplicated, in given order", list: []string{" c", "a", "c "}, want: []string{"c", "a"}},
		{name: "unknown", list: []string{"a", "d"}, err: `unknown thing "d": valid ones are a, b, c, or all or none`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Select(tc.list, valid, "thing")
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("Select(%q) = %q, %v; want %q", tc.list, got, err, tc.want)
			}
		})
	}
}

func TestTryCommands(t *testing.T) {
	tests := []struct {
		name  string
		hooks []string
		want  []string
	}{
		{name: "denied, sidecar, eviction of the sidecar pod", hooks: []string{"pod-name", "pod-sidecar", "pod-eviction"},
			want: []string{"label namespace hookback-try admission-webhook=enabled", "-n hookback-try run offensive-pod",
				"-n hookback-try run hookback-try --image=nginx --annotations", "namespaces/hookback-try/pods/hookback-try/eviction"}},
		{name: "eviction alone creates its pod first", hooks: []string{"pod-eviction"},
			want: []string{"create namespace hookback-try", "run hookback-try --image=nginx", "pods/hookback-try/eviction"}},
		{name: "nothing to show", hooks: []string{"node-status"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tryCommands("KUBECONFIG=/k kubectl", TryNamespace, tc.hooks)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d commands, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i].cmd, w) || !strings.HasPrefix(got[i].cmd, "KUBECONFIG=/k kubectl ") && !strings.HasPrefix(got[i].cmd, "echo ") {
					t.Errorf("command %d = %q, want it to contain %q", i, got[i].cmd, w)
				}
			}
		})
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/bin/kubectl": "/usr/bin/kubectl",
		"/my dir/kubectl":  "'/my dir/kubectl'",
		"it's":             `'it'\''s'`,
		"":                 "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}
