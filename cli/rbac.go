package cli

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/hookback/hookback/plan"
)

var rbacExamples = []Example{
	{Command: "hookback rbac --subject user:alice@example.com > alice.yaml", Comment: "what alice needs to run hookback start with every built-in; kubectl apply -f alice.yaml"},
	{Command: "hookback rbac --webhooks pod-name --controllers none --subject group:webhook-devs | kubectl apply --dry-run=server -f -", Comment: "less, for less"},
	{Command: "hookback rbac --webhooks none --controllers none --webhook-config config/default --subject user:alice@example.com", Comment: "for your operator's webhooks and CRDs (a kubebuilder project root needs no flags)"},
}

// RBACOptions are rbac's flags: what start would run (the part of its
// Plan that decides the permissions) and who the bindings name.
type RBACOptions struct {
	Subject, Name string
	Serve         ServeOptions
}

func (o *RBACOptions) bind(b *binder) {
	p := &o.Serve.Plan
	o.Serve.bindWhatRuns(b)
	o.Serve.bindUpstream(b)
	bind(b, &p.LeaseNamespace, "lease-namespace", catCluster, "namespace for the session Lease and the canary ConfigMap: the Role's", sets("plan.Options.LeaseNamespace"))
	bind(b, &p.Tunnel.Enabled, "tunnel", catTunnel, "add what start --tunnel needs: a Role in --tunnel-namespace for the relay's objects and the pod port-forward", sets("tunnel.Config.Enabled"))
	bind(b, &p.Tunnel.Namespace, "tunnel-namespace", catTunnel, "tunnel: the namespace of that Role, where start --tunnel deploys its relay (it must exist)", sets("tunnel.Config.Namespace"))
	bind(b, &p.TakeOver, "take-over", catUser, "[NAMESPACE/]deployment/NAME: add what start --take-over of it needs (repeatable)", sets("plan.Options.TakeOver"))
	bind(b, &o.Subject, "subject", catOutput, "who the bindings name: user:NAME, group:NAME or serviceaccount:NAMESPACE/NAME")
	bind(b, &o.Name, "rbac-name", catOutput, "name of the ClusterRole, Role and bindings")
}

func rbacCommand() (*cli.Command, *binder) {
	o := RBACOptions{Serve: defaultServeOptions(), Subject: "group:hookback-developers", Name: "hookback-developer"}
	b := &binder{}
	o.bind(b)
	cmd := &cli.Command{
		Name:  "rbac",
		Usage: "print the least-privilege ClusterRole, Role and bindings to run hookback start",
		Description: `rbac prints, as YAML to apply, the roles a developer needs to run hookback start with
the selected built-ins: a ClusterRole for what is needed cluster-wide, a Role in
--lease-namespace for the session Lease and the canary, and a binding of each to
--subject. They are derived from the same declarations check verifies (docs/rbac.yaml
is this command's output with every built-in). Your own webhooks (--webhook-config,
or a kubebuilder project, where the built-ins are off, see --project) add what their
CRDs need: reading them, installing a missing one and redirecting its conversion;
their reviews themselves are only forwarded. Note that the exec-rbac controller makes the
role include pods/exec cluster-wide: RBAC lets only a holder of a permission grant it
(escalation prevention). Without exec-rbac (--controllers pod-name-label) it does not.
With --tunnel it adds a Role in --tunnel-namespace (which must exist) for the relay
start --tunnel deploys there and the pod port-forward to it.` + examplesText(rbacExamples),
		Flags: withGlobal(&o.Serve.GlobalOptions, b),
		Action: func(c *cli.Context) error {
			b.load(c)
			return runRBAC(c, o)
		},
	}
	return cmd, b
}

func runRBAC(c *cli.Context, o RBACOptions) error {
	subject, err := parseSubject(o.Subject)
	if err != nil {
		return usage(err)
	}
	completed, err := plan.Complete(o.Serve.config(Extension{}, discardLog))
	if err != nil {
		return configUsage(err)
	}
	out, err := plan.RBACYAML(completed, o.Name, []rbacv1.Subject{subject})
	if err != nil {
		return err
	}
	_, err = c.App.Writer.Write(out)
	return err
}

func parseSubject(s string) (rbacv1.Subject, error) {
	kind, name, _ := strings.Cut(s, ":")
	switch strings.ToLower(kind) {
	case "user":
		if name != "" {
			return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}, nil
		}
	case "group":
		if name != "" {
			return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}, nil
		}
	case "serviceaccount", "sa":
		if ns, n, ok := strings.Cut(name, "/"); ok && ns != "" && n != "" {
			return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: n}, nil
		}
	}
	return rbacv1.Subject{}, fmt.Errorf("--subject %q: want user:NAME, group:NAME or serviceaccount:NAMESPACE/NAME", s)
}
