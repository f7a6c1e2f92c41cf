package session

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hookback/hookback/project"

	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/tunnel"
)

// banner prints that the session is ready, where, and what to try.
func (r *run) banner(reg *registration.Registration, took, rtt time.Duration, verr error) {
	w := r.cfg.Out
	if w == nil {
		return
	}
	verified := fmt.Sprintf("verified: the apiserver called back in %s", rtt.Round(time.Microsecond))
	if verr != nil {
		verified = "NOT verified (--no-verify): the apiserver could not call hookback, see the log"
	}
	fmt.Fprintf(w, "hookback is ready in %s, %s\n", took.Round(time.Millisecond), verified)
	fmt.Fprintf(w, "  url:      %s\n  session:  %s\n  health:   http://%s/readyz\n", r.url, r.cfg.Session, r.server.HealthAddr())
	if r.tunnel != nil {
		fmt.Fprintf(w, "  tunnel:   relay %s/%s, through the apiserver's port-forward to %s\n",
			r.tunnel.Spec().Namespace, r.tunnel.Spec().Name, r.server.Addr())
	}
	if r.inspector != nil {
		fmt.Fprintf(w, "  inspect:  %s\n", r.inspector.URL())
	}
	r.writeProject(w)
	for _, h := range reg.Webhooks() {
		fmt.Fprintf(w, "  webhook:  %s\n", h)
	}
	r.writeUpstream(w)
	r.user.writeFault(w, r.inspector != nil)
	r.takeOver.writeBanner(w, r.cfg.Scope.Local)
	if r.cfg.Scope.Narrowed() {
		fmt.Fprintf(w, "  scope:    %s\n", r.cfg.Scope)
	}
	writeTry(w, webhooks.TryCommands(r.kubectl(), tryNamespace(r.cfg.Scope), r.cfg.Webhooks))
	fmt.Fprintf(w, "Stop with Ctrl-C to deregister. After a crash, `%s` removes what is left.\n", r.cleanupCommand())
}

// cleanupCommand removes what this session leaves behind after a crash.
func (r *run) cleanupCommand() string {
	cmd := "hookback cleanup --session " + r.cfg.Session
	if r.tunnel != nil && r.tunnel.Spec().Namespace != tunnel.DefaultNamespace {
		cmd += " --tunnel-namespace " + r.tunnel.Spec().Namespace
	}
	return cmd
}

// kubectl is the kubectl command line that reaches this cluster from any
// terminal: the banner is read in another one, where KUBECONFIG may differ.
func (r *run) kubectl() string {
	k := r.cfg.Kubectl
	if k == "" {
		k = "kubectl"
	}
	k = shellQuote(k)
	if files := r.cluster.Config.Files; len(files) > 0 {
		k = "KUBECONFIG=" + shellQuote(strings.Join(files, ":")) + " " + k
	}
	if ctx := r.cfg.Kubeconfig.Context; ctx != "" {
		k += " --context " + shellQuote(ctx)
	}
	return k
}

// try is one suggested command and what it shows.
// TryNamespace is the namespace the banner's try-commands create and label.
const TryNamespace = "hookback-try"

// tryNamespace is the first namespace --namespace names (the scope reaches
// no other), else TryNamespace.
func tryNamespace(sc registration.Scope) string {
	if len(sc.Namespaces) > 0 {
		return sc.Namespaces[0]
	}
	return TryNamespace
}

func writeTry(w io.Writer, cmds []webhooks.Command) {
	if len(cmds) == 0 {
		return
	}
	fmt.Fprintln(w, "Try, from any terminal:")
	for _, t := range cmds {
		fmt.Fprintf(w, "  # %s\n  %s\n", t.What, t.Cmd)
	}
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeProject names the project of project mode and what it reads.
func (r *run) writeProject(w io.Writer) {
	if p := r.cfg.Project; p != nil {
		fmt.Fprintf(w, "  project:  %s, from %s\n", p.Title(), strings.Join(p.ManifestsRel(), " + "))
	}
}

// writeUpstream says where the user's reviews go, what hookback did about
// the upstream's certificate, the CRDs of the manifests, and, in project
// mode, the one command that starts the manager.
func (r *run) writeUpstream(w io.Writer) {
	if r.user == nil || r.user.manifests == nil {
		return
	}
	for _, up := range r.user.spec.Upstreams {
		to := up.URL
		if up.Service != "" {
			to = up.Service + " -> " + up.URL
		}
		fmt.Fprintf(w, "  upstream: %s\n", to)
	}
	if p := r.upstreamPair; p != nil {
		fmt.Fprintf(w, "  cert:     %s\n", p)
	}
	for _, crd := range r.user.manifests.CRDs {
		fmt.Fprintf(w, "  crd:      %s\n", crd.GetName())
	}
	if p := r.cfg.Project; p != nil {
		run := p.Run
		if run == "" {
			run = "start your manager (its webhook server on " + project.DefaultUpstream + ")"
		}
		fmt.Fprintf(w, "Start the manager in another terminal, in %s:\n  %s\n", p.Dir, run)
	}
}
