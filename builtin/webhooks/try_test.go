package webhooks

import (
	"strings"
	"testing"
)

func TestTryCommands(t *testing.T) {
	tests := []struct {
		name  string
		hooks []string
		want  []string
	}{
		{name: "denied, sidecar, eviction of the sidecar pod", hooks: []string{NamePodName, NamePodSidecar, NamePodEviction},
			want: []string{"label namespace hookback-try admission-webhook=enabled", "-n hookback-try run offensive-pod",
				"-n hookback-try run hookback-try --image=nginx --annotations", "namespaces/hookback-try/pods/hookback-try/eviction"}},
		{name: "eviction alone creates its pod first", hooks: []string{NamePodEviction},
			want: []string{"create namespace hookback-try", "run hookback-try --image=nginx", "pods/hookback-try/eviction"}},
		{name: "nothing to show", hooks: []string{NameNodeStatus}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := TryCommands("KUBECONFIG=/k kubectl", "hookback-try", tc.hooks)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d commands, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i].Cmd, w) || !strings.HasPrefix(got[i].Cmd, "KUBECONFIG=/k kubectl ") && !strings.HasPrefix(got[i].Cmd, "echo ") {
					t.Errorf("command %d = %q, want it to contain %q", i, got[i].Cmd, w)
				}
			}
			if strings.Contains(strings.Join(cmds(got), "\n"), "{") && !strings.Contains(strings.Join(cmds(got), "\n"), "{.spec") &&
				!strings.Contains(strings.Join(cmds(got), "\n"), `{"apiVersion"`) {
				t.Errorf("a placeholder was left: %q", cmds(got))
			}
		})
	}
}

func cmds(cs []Command) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Cmd)
	}
	return out
}

// Every row's facts come back through the table's functions, and a row
// names only Options fields that exist.
func TestTableRows(t *testing.T) {
	known := []string{OptionBannedWords, OptionSidecarImage, OptionCPUOversellFactor}
	for _, b := range builtins {
		t.Run(b.name, func(t *testing.T) {
			for _, o := range b.options {
				if !strings.Contains(strings.Join(known, "|"), o) {
					t.Errorf("option %q is no Options field", o)
				}
			}
			if got := NeedsPods([]string{b.name}); got != b.needsPods {
				t.Errorf("NeedsPods = %v, want %v", got, b.needsPods)
			}
			if _, ok := Restores(nil, nil, []string{b.name})[b.name]; ok != (b.restore != nil) {
				t.Errorf("Restores has it: %v, want %v", ok, b.restore != nil)
			}
			for _, p := range Permissions([]string{b.name}) {
				if p.Part != b.name || p.Why == "" {
					t.Errorf("permission %+v: want part %s and a reason", p, b.name)
				}
			}
		})
	}
}
