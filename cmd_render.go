package main

import (
	"github.com/urfave/cli/v2"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/server"
	"github.com/hookback/hookback/webhook"
)

func renderCommand() *cli.Command {
	return &cli.Command{
		Name:  "render",
		Usage: "print the webhook configurations start would apply; writes nothing to the cluster",
		Description: `render renders the template exactly as start would (names suffixed with the session,
hookback's labels added, the caBundle of the local CA) and prints the YAML on stdout.
Without --advertise-address it asks the kubeconfig which address start would pick.

Examples:
   hookback render
   hookback render --advertise-address 192.168.1.20 --webhooks pod-name
   hookback render --template ./my-webhooks.yaml.tmpl | kubectl apply --dry-run=server -f -`,
		Flags:  append(serveFlags(), featureFlags()...),
		Action: runRender,
	}
}

func runRender(c *cli.Context) error {
	log, session, err := loggerAndSession(c)
	if err != nil {
		return err
	}
	hookNames := list(c, "webhooks")
	served, err := servedWebhooks(hookNames, webhookOptions(c))
	if err != nil {
		return err
	}
	host := c.String("advertise-address")
	if host == "" {
		cl, err := loadConfig(c)
		if err != nil {
			return err
		}
		d, err := advertise(c.Context, log, "", cl)
		if err != nil {
			return err
		}
		host = d.Host
	}
	bundle, err := caBundle(c)
	if err != nil {
		return err
	}
	name, text, err := server.Template{Path: c.String("template"), Default: defaultTemplate}.Load()
	if err != nil {
		return err
	}
	reg, err := server.Render(name, text, server.TemplateData{
		URL: webhookURL(host, c.Int("port")), CABundle: bundle, Session: session, Enabled: webhookNames(served),
	}, server.RenderOptions{Paths: webhookPaths(served), LeaseRef: c.String("lease-namespace") + "/" + server.LeaseName(session)})
	if err != nil {
		return err
	}
	out, err := reg.YAML()
	if err != nil {
		return err
	}
	_, err = c.App.Writer.Write(out)
	return err
}

// servedWebhooks builds the selected webhooks only to learn their names and
// paths: render serves nothing.
func servedWebhooks(hookNames []string, opts webhook.Options) ([]admission.Webhook, error) {
	hooks, err := webhook.Build(hookNames, opts, webhook.Deps{Recorder: discardRecorder, Pods: emptyPods()})
	if err != nil {
		return nil, err
	}
	if testWebhooks != nil {
		hooks = append(hooks, testWebhooks()...)
	}
	return hooks, nil
}

// webhookNames are what the template's `enabled NAME` tests: real names,
// with "all" already expanded.
func webhookNames(hooks []admission.Webhook) []string {
	names := make([]string, len(hooks))
	for i, h := range hooks {
		names[i] = h.Name
	}
	return names
}

func webhookPaths(hooks []admission.Webhook) []string {
	paths := make([]string, len(hooks))
	for i, h := range hooks {
		paths[i] = h.Path
	}
	return paths
}

// discardRecorder drops events: render builds handlers only to learn paths.
func discardRecorder(string) events.EventRecorder { return &events.FakeRecorder{} }

func emptyPods() corev1listers.PodLister {
	return corev1listers.NewPodLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
}
