package cli

import (
	"errors"
	"fmt"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/session"
)

var startExamples = []Example{
	{Command: "hookback start", Serves: true},
	{Command: "hookback start --webhooks pod-name,pod-sidecar --controllers none", Serves: true},
	{Command: "hookback start --template my-webhooks.yaml.tmpl --banned-words forbidden", Comment: "your own copy of the template, hot-reloaded", Serves: true},
	{Command: "hookback start -n team-a --only-mine", Comment: "a shared cluster: only your own requests in team-a reach you (docs/shared-clusters.md)", Serves: true},
	{Command: "hookback start --take-over my-operator-system/deployment/my-operator-controller-manager --upstream https://127.0.0.1:9443",
		Comment: "your operator, deployed: paused, its webhooks served by your manager on :9443, given back exactly at exit (docs/take-over.md)", Serves: true},
}

func startCommand(ext Extension) (*cli.Command, *binder) {
	o, b := defaultStartOptions(), &binder{}
	o.bind(b)
	cmd := &cli.Command{
		Name:  "start",
		Usage: "serve the webhooks, register them with the cluster, run the controllers; deregister on exit",
		Description: `start authenticates with the kubeconfig, serves HTTPS on an address the apiserver can
reach, writes Mutating/ValidatingWebhookConfigurations whose clientConfig.url points here,
proves with a dry-run canary that the apiserver really calls back, runs the controllers,
and deletes what it wrote on Ctrl-C or SIGTERM (a second one exits at once). When the
cluster cannot route to this machine (NAT, a cloud cluster), --tunnel deploys a relay for
the session and attaches to it through the apiserver's pod port-forward; the
configurations then reference the relay's Service (docs/tunnel.md). In a kubebuilder or
Operator SDK project (a PROJECT file here, or --project), start needs no flags: it reads
config/default, forwards to the manager's webhook server on :9443 with a certificate it
writes for it, and prints the command that starts the manager (docs/your-webhook.md).` + examplesText(slices.Concat(startExamples, startPolicyExamples)),
		Flags: b.flags,
		Action: func(c *cli.Context) error {
			b.load(c)
			if err := o.check(ext); err != nil {
				return usage(err)
			}
			log := o.logger(c.App.ErrWriter)
			opts := o.config(ext, log, c.App.Writer)
			opts.Policies.Stdin = c.App.Reader
			cfg, err := plan.Complete(opts)
			if err != nil {
				return configUsage(err)
			}
			err = session.Run(c.Context, cfg)
			if errors.Is(err, registration.ErrVerify) {
				// The library's diagnosis names what to fix; the way to
				// run on without the fix is a flag of this command.
				err = fmt.Errorf("%w (--no-verify keeps hookback running with this diagnosis logged)", err)
			}
			return configUsage(err)
		},
	}
	return cmd, b
}

var renderExamples = []Example{
	{Command: "hookback render"},
	{Command: "hookback render --advertise-address 192.0.2.10 --webhooks pod-name", Comment: "nothing is dialled: render only prints"},
	{Command: "hookback render --template my-webhooks.yaml.tmpl | kubectl apply --dry-run=server -f -"},
	{Command: "hookback render -n team-a --object-selector app=web", Comment: "the scope, ANDed into every webhook"},
	{Command: "hookback render --chain -n team-a", Comment: "with the admission chain's observers (docs/chain.md)"},
	{Command: "hookback render --in-cluster --install-namespace webhooks --image registry.example/hookback:v1 --webhooks pod-name --controllers none", Comment: "the in-cluster install (docs/in-cluster.md)"},
}

func renderCommand(ext Extension) (*cli.Command, *binder) {
	o, b := defaultServeOptions(), &binder{}
	o.bind(b)
	bindPolicy(b, &o.Plan)
	bind(b, &o.Plan.Chain, "chain", catUser, "also print the observer configurations start --chain registers (docs/chain.md)", sets("plan.Options.Chain"))
	bind(b, &o.Plan.TakeOver, "take-over", catUser, "[NAMESPACE/]deployment/NAME: also print what start --take-over of it would change, read from the cluster (docs/take-over.md; repeatable)", sets("plan.Options.TakeOver"))
	in := defaultInClusterOptions()
	in.bind(b)
	cmd := &cli.Command{
		Name:  "render",
		Usage: "print the webhook configurations start would apply; writes nothing to the cluster",
		Description: `render renders the template exactly as start would (names suffixed with the session,
hookback's labels added, the caBundle of the certificate start would serve) and prints
the YAML on stdout. Without --advertise-address it asks the kubeconfig which address
start would pick. With --in-cluster it prints instead everything to deploy hookback in the
cluster: Namespace, ServiceAccount, the roles check verifies, Deployment, PodDisruptionBudget,
Service, and the same webhook configurations with clientConfig.service references
(docs/in-cluster.md).` + examplesText(slices.Concat(renderExamples, renderPolicyExamples)),
		Flags: b.flags,
		Action: func(c *cli.Context) error {
			b.load(c)
			if in.Enabled {
				in.GlobalOptions, in.Template, in.Webhooks, in.Controllers = o.GlobalOptions, o.Plan.Template.Path, o.Plan.Webhooks, o.Plan.Controllers
				in.Inapplicable = inapplicable(c, b)
				return runRenderInCluster(c, in, ext)
			}
			for _, name := range inClusterFlagNames {
				if c.IsSet(name) {
					return usage(fmt.Errorf("--%s needs --in-cluster", name))
				}
			}
			if err := o.check(ext); err != nil {
				return usage(err)
			}
			cfg, err := plan.Complete(o.config(ext, o.logger(c.App.ErrWriter)))
			if err != nil {
				return configUsage(err)
			}
			out, err := session.Render(c.Context, cfg)
			if err != nil {
				return configUsage(err)
			}
			_, err = c.App.Writer.Write(out)
			return err
		},
	}
	return cmd, b
}

// startPolicyExamples and renderPolicyExamples are --policy's (docs/policies.md).
var startPolicyExamples = []Example{
	{Command: "hookback start --policy policies/ --webhooks none --controllers none", Comment: "the inner loop of a ValidatingAdmissionPolicy: every request it matches is evaluated with the apiserver's code and shown in the inspector; edit the file and the next request uses the edit", Serves: true},
	{Command: "hookback start --policy policies/policy.yaml --webhooks pod-name --controllers none", Comment: "a migration: each review is answered by the webhook and compared with the policy; disagreements are logged, counted, shown and summed up at exit", Serves: true},
}
var renderPolicyExamples = []Example{
	{Command: "hookback render --policy policies/ --advertise-address 192.0.2.10 --webhooks none", Comment: "with the observer --policy registers for the policies' resources"},
}
