package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/incluster"
	"github.com/hookback/hookback/session"
	"github.com/hookback/hookback/webhook"
)

var serveExamples = []Example{
	{Command: "hookback serve", Comment: "in a pod of render --in-cluster's Deployment (its args add --install-namespace)", Serves: true},
	{Command: "hookback serve --webhooks pod-name --controllers none --shutdown-delay 0s", Serves: true},
}

// serveFlagNamesPod are serve's flags.
var serveFlagNamesPod = []string{"install-namespace", "identity", "port", "bind-address", "health-address", "template",
	"webhooks", "controllers", "banned-words", "sidecar-image", "cpu-oversell-factor",
	"tls-cert-file", "tls-key-file", "ca-file", "lease-duration", "shutdown-delay"}

// PodOptions are serve's flags: the mode for a pod of the install.
type PodOptions struct {
	GlobalOptions
	Namespace, Identity, BindAddress, HealthAddress, Template string
	Port                                                      int
	Webhooks, Controllers                                     []string
	Webhook                                                   webhook.Options
	CertFile, KeyFile, CAFile                                 string
	LeaseDuration, ShutdownDelay                              time.Duration
}

func podOptions(c *cli.Context) PodOptions {
	o := PodOptions{GlobalOptions: globalOptions(c), Namespace: c.String("install-namespace"), Identity: c.String("identity"),
		BindAddress: c.String("bind-address"), HealthAddress: c.String("health-address"), Template: c.String("template"),
		Port: c.Int("port"), Webhooks: strings.Split(c.String("webhooks"), ","), Controllers: strings.Split(c.String("controllers"), ","),
		Webhook:  webhookOptions(c),
		CertFile: c.String("tls-cert-file"), KeyFile: c.String("tls-key-file"), CAFile: c.String("ca-file"),
		LeaseDuration: c.Duration("lease-duration"), ShutdownDelay: c.Duration("shutdown-delay")}
	if o.Identity == "" {
		o.Identity = os.Getenv("POD_NAME")
	}
	return o
}

// Validate reports every problem at once.
func (o PodOptions) Validate() error {
	errs := []error{o.GlobalOptions.Validate(), validateWebhookOptions(o.Webhook)}
	if _, err := session.SelectWebhooks(o.Webhooks); err != nil {
		errs = append(errs, fmt.Errorf("--webhooks: %w", err))
	}
	if _, err := session.SelectControllers(o.Controllers); err != nil {
		errs = append(errs, fmt.Errorf("--controllers: %w", err))
	}
	return errors.Join(errs...)
}

// config is the incluster.ServeConfig; call after Validate. Its own
// Validate reports the rest.
func (o PodOptions) config(ext Extension) (incluster.ServeConfig, error) {
	hooks, _ := session.SelectWebhooks(o.Webhooks)
	ctls, _ := session.SelectControllers(o.Controllers)
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

func serveCommand(ext Extension) *cli.Command {
	fl := withGlobalText(map[string]string{
		"lease-duration": "how long the leader Lease lasts without renewal before another replica takes over the controllers",
		"bind-address":   "address to listen on (default: all interfaces)",
	}, serveFlagNamesPod...)
	for _, f := range fl {
		switch f := f.(type) {
		case *cli.StringFlag:
			if f.Name == "health-address" {
				f.Value = incluster.DefaultHealthAddress
			}
		case *cli.DurationFlag:
			if f.Name == "lease-duration" {
				f.Value = incluster.DefaultLeaseDuration
			}
		}
	}
	return &cli.Command{
		Name:  "serve",
		Usage: "run in a pod of the in-cluster install: serve the webhooks, register them by Service, lead the controllers",
		Description: `serve is the mode for the pods of hookback render --in-cluster (docs/in-cluster.md). It
uses the in-cluster config, serves the webhooks on --port and /healthz, /readyz, /metrics
on --health-address, applies the webhook configurations with clientConfig.service
references to the Service hookback and the caBundle of a CA it keeps in the Secret
hookback-ca (or of --tls-cert-file from cert-manager), and runs the controllers only while
it holds the Lease hookback: every replica serves, one leads. It never deregisters on
exit; hookback uninstall removes the install.` + examplesText(serveExamples),
		Flags: append(fl, oldNamespaceFlag()),
		Action: func(c *cli.Context) error {
			if c.IsSet("namespace") {
				return usage(errors.New(renamedNamespace))
			}
			o := podOptions(c)
			if err := o.Validate(); err != nil {
				return usage(err)
			}
			cfg, err := o.config(ext)
			if err != nil {
				return usage(err)
			}
			if err := cfg.Validate(); err != nil {
				return usage(err)
			}
			cfg.Log, cfg.Out = o.logger(c.App.ErrWriter), c.App.Writer
			return incluster.Serve(c.Context, cfg)
		},
	}
}

var uninstallExamples = []Example{
	{Command: "hookback uninstall", Comment: "the install in --install-namespace (default hookback-system)"},
}

func uninstallCommand() *cli.Command {
	return &cli.Command{
		Name:  "uninstall",
		Usage: "remove the in-cluster install, and the node CPU and exec RBAC its built-ins wrote",
		Description: `uninstall deletes what render --in-cluster installed in --install-namespace (everything labelled
app.kubernetes.io/part-of=hookback,app.kubernetes.io/name=hookback): the webhook
configurations first, so the apiserver stops calling; then the Deployment, waiting for its
pods; then restores node CPU and removes exec RBAC unless a live laptop session still
runs those parts; then the rest, the namespace last. serve never does this on a pod's
exit: the install outlives any one pod.` + examplesText(uninstallExamples),
		Flags: append(withGlobalText(map[string]string{
			"lease-namespace": "where laptop sessions keep their Leases: exec RBAC and node CPU stay while one of them runs the part",
		}, "install-namespace", "lease-namespace", "wait"), oldNamespaceFlag()),
		Action: func(c *cli.Context) error {
			if c.IsSet("namespace") {
				return usage(errors.New(renamedNamespace))
			}
			g := globalOptions(c)
			if err := g.Validate(); err != nil {
				return usage(err)
			}
			deleted, err := incluster.Uninstall(c.Context, incluster.UninstallConfig{Kubeconfig: g.kubeconfig(),
				Namespace: c.String("install-namespace"), LeaseNamespace: c.String("lease-namespace"),
				PodsTimeout: c.Duration("wait"), Log: g.logger(c.App.ErrWriter)})
			if len(deleted) == 0 {
				fmt.Fprintf(c.App.Writer, "nothing of hookback installed in namespace %s\n", c.String("install-namespace"))
			} else {
				fmt.Fprintf(c.App.Writer, "deleted: %s\n", strings.Join(deleted, ", "))
			}
			return err
		},
	}
}
