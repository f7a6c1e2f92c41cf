package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/assembly"
	"github.com/hookback/hookback/builtin/controllers"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/incluster"
	"github.com/hookback/hookback/plan"
)

var serveExamples = []Example{
	{Command: "hookback serve", Comment: "in a pod of render --in-cluster's Deployment (its args add --install-namespace)", Serves: true},
	{Command: "hookback serve --webhooks pod-name --controllers none --shutdown-delay 0s", Serves: true},
}

// PodOptions are serve's flags: the mode for a pod of the install.
type PodOptions struct {
	GlobalOptions
	Namespace, Identity, BindAddress, HealthAddress, Template string
	Port                                                      int
	Webhooks, Controllers                                     []string
	Webhook                                                   webhooks.Options
	CertFile, KeyFile, CAFile                                 string
	LeaseDuration, ShutdownDelay                              time.Duration
}

func defaultPodOptions() PodOptions {
	return PodOptions{GlobalOptions: defaultGlobalOptions(), Namespace: incluster.DefaultNamespace, Port: incluster.WebhookPort,
		HealthAddress: incluster.DefaultHealthAddress, Webhooks: []string{plan.All}, Controllers: []string{plan.All}, Webhook: webhooks.DefaultOptions(),
		LeaseDuration: incluster.DefaultLeaseDuration, ShutdownDelay: incluster.DefaultShutdownDelay}
}

func (o *PodOptions) bind(b *binder) {
	o.GlobalOptions.bind(b)
	bind(b, &o.Namespace, "install-namespace", catInCluster, "in-cluster: the install's namespace (its Service, the CA Secret, the leader election Lease)", sets("incluster.ServeConfig.Namespace"))
	bindOldNamespace(b)
	bind(b, &o.Identity, "identity", catInCluster, "serve: this replica's name in the leader election Lease (default: $POD_NAME, else host-pid)")
	bind(b, &o.LeaseDuration, "lease-duration", catInCluster, "how long the leader Lease lasts without renewal before another replica takes over the controllers", sets("incluster.ServeConfig.LeaseDuration"))
	bind(b, &o.ShutdownDelay, "shutdown-delay", catInCluster, "serve: how long a stopping replica keeps answering, not ready, while the Service's endpoints drop it", sets("incluster.ServeConfig.ShutdownDelay"))
	bind(b, &o.Port, "port", catServing, "HTTPS port for the webhooks", sets("incluster.ServeConfig.Port"))
	bind(b, &o.BindAddress, "bind-address", catServing, "address to listen on (default: all interfaces)")
	bind(b, &o.HealthAddress, "health-address", catServing, "host:port for /healthz, /readyz and /metrics")
	bind(b, &o.Template, "template", catServing, "webhook configuration template (default: the built-in webhook-url.yaml.tmpl)")
	bind(b, &o.CertFile, "tls-cert-file", catServing, "serving certificate (PEM, cert-manager's tls.crt); reloaded on change (default: a CA kept in the Secret hookback-ca)")
	bind(b, &o.KeyFile, "tls-key-file", catServing, "its private key; reloaded on change")
	bind(b, &o.CAFile, "ca-file", catServing, "CA the apiserver should trust (the caBundle); empty with cert-manager's cainjector")
	bind(b, &o.Webhooks, "webhooks", catBuiltins, "built-in webhooks to serve, all or none (comma list or repeated: "+strings.Join(webhooks.Names(), ", ")+")")
	bind(b, &o.Controllers, "controllers", catBuiltins, "controllers to run, all or none (comma list or repeated: "+strings.Join(controllers.Names(), ", ")+")")
	bindWebhookOptions(b, &o.Webhook)
}

// Validate reports the flags' own problems; the rules of the ServeConfig
// live once in incluster (ServeConfig.Validate), which Serve runs.
func (o PodOptions) Validate() error {
	return errors.Join(o.GlobalOptions.Validate(), validateSelection(o.Webhooks, o.Controllers))
}

// check is Validate and config; when the flags already fail, the
// ServeConfig's problems are added, so every problem is reported at once.
func (o PodOptions) check(ext Extension) (incluster.ServeConfig, error) {
	cfg, cfgErr := o.config(ext)
	err := errors.Join(o.Validate(), cfgErr)
	if err != nil && cfgErr == nil {
		err = errors.Join(err, cfg.Validate())
	}
	return cfg, err
}

// config is the incluster.ServeConfig of the flags.
func (o PodOptions) config(ext Extension) (incluster.ServeConfig, error) {
	hooks, _ := assembly.SelectWebhooks(splitLists(o.Webhooks))
	ctls, _ := assembly.SelectControllers(splitLists(o.Controllers))
	tmpl := ext.Template
	if o.Template != "" {
		b, err := os.ReadFile(o.Template)
		if err != nil {
			return incluster.ServeConfig{}, fmt.Errorf("read --template: %w", err)
		}
		tmpl = b
	}
	return incluster.ServeConfig{Kubeconfig: o.kubeconfig(), Namespace: o.Namespace, Identity: o.Identity,
		BindAddress: o.BindAddress, Port: o.Port, HealthAddress: o.HealthAddress, Template: tmpl,
		Webhooks: hooks, Controllers: ctls, WebhookOptions: o.Webhook,
		CertFile: o.CertFile, KeyFile: o.KeyFile, CAFile: o.CAFile,
		LeaseDuration: o.LeaseDuration, ShutdownDelay: o.ShutdownDelay}, nil
}

func serveCommand(ext Extension) (*cli.Command, *binder) {
	o, b := defaultPodOptions(), &binder{}
	o.bind(b)
	cmd := &cli.Command{
		Name:  "serve",
		Usage: "run in a pod of the in-cluster install: serve the webhooks, register them by Service, lead the controllers",
		Description: `serve is the mode for the pods of hookback render --in-cluster (docs/in-cluster.md). It
uses the in-cluster config, serves the webhooks on --port and /healthz, /readyz, /metrics
on --health-address, applies the webhook configurations with clientConfig.service
references to the Service hookback and the caBundle of a CA it keeps in the Secret
hookback-ca (or of --tls-cert-file from cert-manager), and runs the controllers only while
it holds the Lease hookback: every replica serves, one leads. It never deregisters on
exit; hookback uninstall removes the install.` + examplesText(serveExamples),
		Flags: b.flags,
		Action: func(c *cli.Context) error {
			b.load(c)
			if err := refuseOldNamespace(c); err != nil {
				return err
			}
			if o.Identity == "" {
				o.Identity = os.Getenv("POD_NAME")
			}
			cfg, err := o.check(ext)
			if err != nil {
				return usage(err)
			}
			cfg.Log, cfg.Out = o.logger(c.App.ErrWriter), c.App.Writer
			return configUsage(incluster.Serve(c.Context, cfg))
		},
	}
	return cmd, b
}

var uninstallExamples = []Example{
	{Command: "hookback uninstall", Comment: "the install in --install-namespace (default hookback-system)"},
}

func uninstallCommand() (*cli.Command, *binder) {
	g, b := defaultGlobalOptions(), &binder{}
	ns, leaseNS, wait := incluster.DefaultNamespace, "default", time.Minute
	bind(b, &ns, "install-namespace", catInCluster, "in-cluster: the install's namespace (its Service, the CA Secret, the leader election Lease)")
	bind(b, &leaseNS, "lease-namespace", catCluster, "where laptop sessions keep their Leases: exec RBAC and node CPU stay while one of them runs the part")
	bind(b, &wait, "wait", catInCluster, "how long to wait for the install's pods to stop before cleaning up what they wrote")
	bindOldNamespace(b)
	cmd := &cli.Command{
		Name:  "uninstall",
		Usage: "remove the in-cluster install, and the node CPU and exec RBAC its built-ins wrote",
		Description: `uninstall deletes what render --in-cluster installed in --install-namespace (everything labelled
app.kubernetes.io/part-of=hookback,app.kubernetes.io/name=hookback): the webhook
configurations first, so the apiserver stops calling; then the Deployment, waiting for its
pods; then restores node CPU and removes exec RBAC unless a live laptop session still
runs those parts; then the rest, the namespace last. serve never does this on a pod's
exit: the install outlives any one pod.` + examplesText(uninstallExamples),
		Flags: withGlobal(&g, b),
		Action: func(c *cli.Context) error {
			b.load(c)
			if err := refuseOldNamespace(c); err != nil {
				return err
			}
			if err := g.Validate(); err != nil {
				return usage(err)
			}
			deleted, err := incluster.Uninstall(c.Context, incluster.UninstallConfig{Kubeconfig: g.kubeconfig(),
				Namespace: ns, LeaseNamespace: leaseNS, PodsTimeout: wait, Log: g.logger(c.App.ErrWriter)})
			if len(deleted) == 0 {
				fmt.Fprintf(c.App.Writer, "nothing of hookback installed in namespace %s\n", ns)
			} else {
				fmt.Fprintf(c.App.Writer, "deleted: %s\n", strings.Join(deleted, ", "))
			}
			return err
		},
	}
	return cmd, b
}
