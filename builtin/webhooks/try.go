package webhooks

import (
	"slices"
	"strings"
)

// TryPod is the pod the banner's commands create and evict.
const TryPod = "hookback-try"

// Try is one command the start banner suggests to see a built-in at work.
// Args follow `kubectl -n NS`; Raw is a whole command line instead, in
// which {kubectl} and {ns} are replaced. MakesTryPod: it creates TryPod;
// NeedsTryPod: it needs TryPod to exist.
type Try struct {
	What, Args, Raw          string
	MakesTryPod, NeedsTryPod bool
}

// Command is a Try ready to print.
type Command struct{ What, Cmd string }

// TryCommands are the commands that show the named webhooks at work in ns,
// in table order: first the namespace, created and labelled for seed
// 002's opt-in (pod-name and pod-lifespan select only labelled or named
// namespaces), then each webhook's, with TryPod created first for one
// that needs it when no earlier command made it. None when no named
// webhook has one.
func TryCommands(kubectl, ns string, names []string) []Command {
	var out []Command
	made := false
	replace := strings.NewReplacer("{kubectl}", kubectl, "{ns}", ns)
	for _, b := range rows(names) {
		for _, t := range b.try {
			if t.NeedsTryPod && !made {
				out = append(out, Command{"a pod to evict", kubectl + " -n " + ns + " run " + TryPod + " --image=nginx"})
				made = true
			}
			cmd := replace.Replace(t.Raw)
			if t.Raw == "" {
				cmd = kubectl + " -n " + ns + " " + replace.Replace(t.Args)
			}
			out = append(out, Command{t.What, cmd})
			made = made || t.MakesTryPod
		}
	}
	if len(out) == 0 {
		return nil
	}
	prep := Command{"a namespace for the demo, labelled admission-webhook=enabled as seed 002's webhooks select",
		kubectl + " create namespace " + ns + " --dry-run=client -o yaml | " + kubectl + " apply -f - && " +
			kubectl + " label namespace " + ns + " admission-webhook=enabled --overwrite"}
	return slices.Insert(out, 0, prep)
}
