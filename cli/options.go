package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"k8s.io/klog/v2"

	"github.com/hookback/hookback/assembly"
	"github.com/hookback/hookback/builtin/controllers"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/incluster"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/project"
	"github.com/hookback/hookback/registration"
)

// GlobalOptions are the flags every command takes, before or after the
// command, as kubectl users type them.
type GlobalOptions struct {
	Kubeconfig, Context string
	LogFormat, LogLevel string
}

func defaultGlobalOptions() GlobalOptions { return GlobalOptions{LogFormat: "text", LogLevel: "info"} }

func (o *GlobalOptions) bind(b *binder) {
	bind(b, &o.Kubeconfig, "kubeconfig", catGlobal, "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)", sets("kubeconfig.Options.Path"))
	bind(b, &o.Context, "context", catGlobal, "kubeconfig context to use instead of current-context", sets("kubeconfig.Options.Context"))
	bind(b, &o.LogFormat, "log-format", catGlobal, "log format: text or json")
	bind(b, &o.LogLevel, "log-level", catGlobal, "log level: debug, info, warn or error")
}

func (o GlobalOptions) kubeconfig() kubeconfig.Options {
	return kubeconfig.Options{Path: o.Kubeconfig, Context: o.Context}
}

// Validate reports every problem at once.
func (o GlobalOptions) Validate() error {
	var errs []error
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.LogLevel)); err != nil {
		errs = append(errs, fmt.Errorf("--log-level %q: want debug, info, warn or error", o.LogLevel))
	}
	if o.LogFormat != "text" && o.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("--log-format %q: want text or json", o.LogFormat))
	}
	return errors.Join(errs...)
}

// logger builds the injected logger; call after Validate.
func (o GlobalOptions) logger(w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(o.LogLevel))
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: flagNamesInErrors}
	var log *slog.Logger
	if o.LogFormat == "json" {
		log = slog.New(slog.NewJSONHandler(w, opts))
	} else {
		log = slog.New(slog.NewTextHandler(w, opts))
	}
	// client-go logs through klog; send it through the same handler so the
	// output stays one structured stream. The CLI owns this process-wide
	// setting.
	klog.SetSlogLogger(log.With("component", "client-go"))
	return log
}

// start's default ports stay clear of a controller-runtime manager's
// (webhooks 9443, probes 8081, metrics 8080 or 8443) so that both run side
// by side with their defaults.
const (
	DefaultPort          = plan.DefaultPort
	DefaultHealthAddress = plan.DefaultHealthAddress
)

// ServeOptions are the flags of start and render (audit, test and drill
// take them too): what decides the URL and the configurations. Each flag
// binds straight to a field of Plan, the library's options, whose
// defaults (plan.DefaultOptions) are the flags' defaults; plan.Complete
// resolves and validates them.
type ServeOptions struct {
	GlobalOptions
	Plan plan.Options
}

func defaultServeOptions() ServeOptions {
	return ServeOptions{GlobalOptions: defaultGlobalOptions(), Plan: plan.DefaultOptions()}
}

func (o *ServeOptions) bind(b *binder) {
	o.GlobalOptions.bind(b)
	p := &o.Plan
	bind(b, &p.Session, "session", catCluster, "session name: suffixes every object hookback writes (default: <user>-<host>)", sets("plan.Options.Session", "registration.Heartbeat.Session"))
	bind(b, &p.LeaseNamespace, "lease-namespace", catCluster, "namespace for the session Lease and the canary ConfigMap", sets("plan.Options.LeaseNamespace"))
	bind(b, &p.AdvertiseAddress, "advertise-address", catServing, "IP or DNS name the apiserver dials to reach hookback (default: decided from the kubeconfig's server, see docs/reachability.md)", sets("plan.Options.AdvertiseAddress", "advertise.Input.Explicit"))
	bind(b, &p.Port, "port", catServing, "HTTPS port for the webhooks", sets("plan.Options.Port"))
	bind(b, &p.Template.Path, "template", catServing, "webhook configuration template (default: the built-in webhook-url.yaml.tmpl); hot-reloaded while running", sets("registration.Template.Path"))
	bindCerts(b, &p.Certs)
	o.bindWhatRuns(b)
	bindWebhookOptions(b, &p.WebhookOptions)
	o.bindUpstream(b)
	bind(b, &p.User.KeepFailurePolicy, "keep-failure-policy", catUser, "your webhooks: keep each failurePolicy; without it every one becomes Ignore, so a stopped debugger never blocks the cluster", sets("plan.UserWebhooks.KeepFailurePolicy"))
	bind(b, &p.User.Timeout, "timeout", catUser, "your webhooks: override every timeoutSeconds, 1s to 30s (30s while stepping through a handler in a debugger); 0 keeps each one's", sets("plan.UserWebhooks.Timeout"))
	bindScope(b, &p.Scope)
}

// bindCerts binds the serving certificate's flags.
func bindCerts(b *binder, c *certs.Options) {
	bind(b, &c.StateDir, "state-dir", catServing, "where the local CA and certificates live", sets("certs.Options.StateDir"))
	bind(b, &c.Mode, "tls-mode", catServing, "self-signed (a local CA in --state-dir), acme (a certificate from an ACME CA, --acme-*) or files (--tls-cert-file, --tls-key-file, --ca-file)", sets("certs.Options.Mode"))
	bind(b, &c.CertFile, "tls-cert-file", catServing, "files mode: serving certificate (PEM, may include the chain); reloaded on change", sets("certs.Options.CertFile"))
	bind(b, &c.KeyFile, "tls-key-file", catServing, "files mode: its private key; reloaded on change", sets("certs.Options.KeyFile"))
	bind(b, &c.CAFile, "ca-file", catServing, "files and acme modes: CA the apiserver should trust (the caBundle); empty when the certificate is publicly trusted", sets("certs.Options.CAFile"))
	bind(b, &c.ACME.CA, "acme-ca", catServing, "acme mode: ACME directory URL; using it agrees to the CA's terms of service", sets("certs.ACMEOptions.CA"))
	bind(b, &c.ACME.Email, "acme-email", catServing, "acme mode: contact email for the ACME account (optional)", sets("certs.ACMEOptions.Email"))
	bind(b, &c.ACME.CARootFile, "acme-ca-root", catServing, "acme mode: PEM root to trust for the ACME server's own HTTPS (a private ACME server such as pebble)", sets("certs.ACMEOptions.CARootFile"))
	bind(b, &c.ACME.Profile, "acme-profile", catServing, "acme mode: ACME profile to order under (Let's Encrypt issues IP certificates only under shortlived); empty: the CA's default", sets("certs.ACMEOptions.Profile"))
	bind(b, &c.ACME.HTTPPort, "acme-http-port", catServing, "acme mode: port the HTTP-01 challenge is answered on, opened only while a challenge is pending (the CA always dials port 80: forward it here when different)", sets("certs.ACMEOptions.HTTPPort"))
	bind(b, &c.ACME.RenewCheckInterval, "acme-renew-check-interval", catServing, "acme mode: how often certmagic checks whether to renew", hidden)
}

// bindScope binds the scope flags (start, render, audit): each narrows
// every webhook registered, ANDed with its own selectors
// (docs/shared-clusters.md).
func bindScope(b *binder, s *registration.Scope) {
	bind(b, &s.Namespaces, "namespace", catScope, "only objects in this namespace reach hookback (repeatable); naming one also opts it in to pod-name and pod-lifespan", alias("n"), sets("registration.Scope.Namespaces"))
	bind(b, &s.NamespaceSelector, "namespace-selector", catScope, "only objects in namespaces matching this label selector (kubectl syntax) reach hookback", sets("registration.Scope.NamespaceSelector"))
	bind(b, &s.ObjectSelector, "object-selector", catScope, "only objects matching this label selector (kubectl syntax) reach hookback", sets("registration.Scope.ObjectSelector"))
	bind(b, &s.OnlyMine, "only-mine", catScope, "only requests made with your own identity reach hookback (a matchCondition on your username; pods a controller creates are the controller's)", sets("registration.Scope.OnlyMine"))
	bind(b, &s.AllNamespaces, "all-namespaces", catScope, "register cluster-wide on a cluster that is not local (without a scope start refuses there)", sets("registration.Scope.AllNamespaces"))
	bind(b, &s.ConvertCRDs, "convert", catScope, "on a cluster that is not local, redirect the conversion of this CRD (repeatable); conversion cannot be scoped", sets("registration.Scope.ConvertCRDs"))
}

// bindWhatRuns binds what decides what start runs, and so the permissions
// it needs (check and rbac bind them too): the built-ins selected, your
// manifests, the project.
func (o *ServeOptions) bindWhatRuns(b *binder) {
	bindSelection(b, &o.Plan)
	bind(b, &o.Plan.ProjectDir, "project", catUser, "kubebuilder or Operator SDK project root, or auto: the current directory when it has a PROJECT file and no --webhook-config is given; its config/default, the default built-ins off, --upstream "+project.DefaultUpstream, sets("plan.Options.ProjectDir"))
	bind(b, &o.Plan.User.Manifests, "webhook-config", catUser, "your webhook configurations and CRDs as written for the cluster (file, directory, kustomize directory, bundle such as dist/install.yaml, or - for stdin; repeatable): rewritten to point at hookback, other kinds skipped", sets("plan.UserWebhooks.Manifests"))
}

// bindSelection binds --webhooks and --controllers.
func bindSelection(b *binder, p *plan.Options) {
	bind(b, &p.Webhooks, "webhooks", catBuiltins, "built-in webhooks to serve, all or none (comma list or repeated: "+strings.Join(webhooks.Names(), ", ")+"); in project mode the default is none", sets("plan.Options.Webhooks"))
	bind(b, &p.Controllers, "controllers", catBuiltins, "controllers to run, all or none (comma list or repeated: "+strings.Join(controllers.Names(), ", ")+"); in project mode the default is none", sets("plan.Options.Controllers"))
}

// bindUpstream binds where your webhooks' reviews go.
func (o *ServeOptions) bindUpstream(b *binder) {
	u := &o.Plan.User
	bind(b, &u.Upstream, "upstream", catUser, "your webhook server, where hookback forwards their reviews: URL, or NAMESPACE/SERVICE=URL for the webhooks of one Service (repeatable)", sets("plan.UserWebhooks.Upstream"))
	bind(b, &u.UpstreamCA, "upstream-ca", catUser, "CA file to trust an https upstream", sets("plan.UserWebhooks.UpstreamCA", "upstream.Options.CAFile"))
	bind(b, &u.UpstreamInsecure, "upstream-insecure", catUser, "do not verify an https upstream's certificate (loopback upstreams only)", sets("plan.UserWebhooks.UpstreamInsecure", "upstream.Options.Insecure"))
}

// bindWebhookOptions binds the built-in webhooks' own options.
func bindWebhookOptions(b *binder, o *webhooks.Options) {
	bind(b, &o.BannedWords, "banned-words", catBuiltins, "pod-name: words a pod name must not contain", sets("webhooks.Options.BannedWords"))
	bind(b, &o.SidecarImage, "sidecar-image", catBuiltins, "pod-sidecar: image of the injected xxl-agent container", sets("webhooks.Options.SidecarImage"))
	bind(b, &o.CPUOversellFactor, "cpu-oversell-factor", catBuiltins, "node-status: multiply node allocatable CPU by this (1 disables)", sets("webhooks.Options.CPUOversellFactor"))
}

// Validate reports the flags' own problems: the log settings. Every rule
// of the options themselves lives once in the library
// (plan.Options.Validate), which plan.Complete runs.
func (o ServeOptions) Validate() error { return o.GlobalOptions.Validate() }

// check is Validate and the library's validation, every problem at once.
func (o ServeOptions) check(ext Extension) error {
	return errors.Join(o.Validate(), o.config(ext, discardLog).Validate())
}

var discardLog = slog.New(slog.DiscardHandler)

// configUsage shows what the library's validation reports as a usage
// error, like the flags' own problems.
func configUsage(err error) error {
	if errors.Is(err, plan.ErrInvalidConfig) || errors.Is(err, incluster.ErrInvalidConfig) {
		return usage(err)
	}
	return err
}

// validateSelection checks a --webhooks and --controllers comma list
// (render --in-cluster and serve, which take names, not plan.Options).
func validateSelection(webhooks, controllers []string) error {
	var errs []error
	if _, err := assembly.SelectWebhooks(splitLists(webhooks)); err != nil {
		errs = append(errs, fmt.Errorf("--webhooks: %w", err))
	}
	if _, err := assembly.SelectControllers(splitLists(controllers)); err != nil {
		errs = append(errs, fmt.Errorf("--controllers: %w", err))
	}
	return errors.Join(errs...)
}

// splitLists splits each comma list of l.
func splitLists(l []string) []string {
	var out []string
	for _, s := range l {
		out = append(out, strings.Split(s, ",")...)
	}
	return out
}

// config is the library's options of these flags, with what only the
// program knows: the kubeconfig flags every command shares, the embedded
// template and extra webhooks, the logger, this build's version.
func (o ServeOptions) config(ext Extension, log *slog.Logger) plan.Options {
	p := o.Plan
	p.Kubeconfig = o.kubeconfig()
	p.Template.Default = ext.Template
	p.Extra = ext.Webhooks
	p.Log, p.Certs.Log = log, log
	p.Version = version()
	return p
}

// StartOptions are start's flags: ServeOptions and the rest of start's
// fields of plan.Options.
type StartOptions struct {
	ServeOptions
}

func defaultStartOptions() StartOptions {
	return StartOptions{ServeOptions: defaultServeOptions()}
}

func (o *StartOptions) bind(b *binder) {
	o.ServeOptions.bind(b)
	p := &o.Plan
	bind(b, &p.LeaseDuration, "lease-duration", catCluster, "how long the session survives without a heartbeat before another run may clean it up", sets("plan.Options.LeaseDuration"))
	bind(b, &p.BindAddress, "bind-address", catServing, "address to listen on (default: the advertise address when it is this machine's, else all interfaces)", sets("plan.Options.BindAddress"))
	bind(b, &p.HealthAddress, "health-address", catServing, "host:port for /healthz, /readyz and /metrics", sets("plan.Options.HealthAddress"))
	bind(b, &p.NoVerify, "no-verify", catServing, "keep running (and log the diagnosis) when verification shows the apiserver cannot reach hookback", sets("plan.Options.NoVerify"))
	bind(b, &p.VerifyTimeout, "verify-timeout", catServing, "how long verification may take", sets("plan.Options.VerifyTimeout"))
	bind(b, &p.User.CertDir, "upstream-cert-dir", catUser, "write a serving certificate for your webhook server here (tls.crt, tls.key, signed by hookback's CA, which then verifies it); never over one hookback did not write (default in project mode: controller-runtime's, $TMPDIR/k8s-webhook-server/serving-certs)", sets("plan.UserWebhooks.CertDir"))
	bind(b, &p.User.LateAnswerTimeout, "late-answer-timeout", catUser, "your webhooks: how long an answer is still awaited after the apiserver stopped waiting (a breakpoint); it is then logged, shown in the inspector and recorded as late (0 disables)", sets("plan.UserWebhooks.LateAnswerTimeout"))
	bind(b, &p.User.Shadow.Target, "shadow", catUser, "compare your webhooks with the ones deployed in the cluster: NAMESPACE/SERVICE[:PORT] (through the apiserver's service proxy) or an https URL (with a path: used as is; without: each webhook's path appended); hookback's copies then always allow, and differences are logged, counted and summed up at exit", sets("plan.ShadowConfig.Target", "upstream.ShadowTarget.URL", "upstream.ShadowTarget.Proxy", "upstream.ServiceRef.Name", "upstream.ServiceRef.Port"))
	bind(b, &p.User.Shadow.CAFile, "shadow-ca", catUser, "CA file to verify an https --shadow URL (default: the system roots)", sets("plan.ShadowConfig.CAFile", "upstream.ShadowTarget.CAFile"))
	bind(b, &p.User.Fault, "fault", catUser, "your webhooks misbehave on purpose, to watch the cluster while they are down or slow: refuse, timeout (never answers), error (HTTP 500) or slow=DUR (answers after DUR); the apiserver applies each webhook's failurePolicy (Ignore unless --keep-failure-policy)", sets("plan.UserWebhooks.Fault"))
	bind(b, &p.Chain, "chain", catUser, "register observer webhooks sorted first and last among mutating configurations and a validating one, scoped like your webhooks, and show per request what every other webhook and policy changed before and after yours, in the inspector and --record-dir (docs/chain.md)", sets("plan.Options.Chain"))
	bind(b, &p.ChainAuditLog, "chain-audit-log", catUser, "with --chain: the apiserver's audit log file (JSON lines, level Request for writes), where this machine can read it (the local control plane's .cache/cluster/audit.log): each change is then named from the apiserver's own patch annotations, and the policies' changes shown against the object as the client sent it", sets("plan.Options.ChainAuditLog"))
	bindPolicy(b, p)
	bind(b, &p.PolicyEnforce.Enabled, "policy-enforce", catUser, "apply --policy's policies, bindings and params to the cluster so the apiserver itself decides, instead of evaluating them beside it: named with the session, each binding narrowed to the session's scope, labelled, and removed at exit (or after a crash by the next start or hookback cleanup)", sets("plan.PolicyEnforce.Enabled"))
	bind(b, &p.TakeOver, "take-over", catUser, "[NAMESPACE/]deployment/NAME: pause your operator deployed in the cluster for the session (scaled to 0, its webhook configurations and CRD conversions pointed at hookback under their own names, the Lease its manager leads with released) and give it back exactly at exit (repeatable; without NAMESPACE: the one -n, else your manifests' namespace; docs/take-over.md)", sets("plan.Options.TakeOver"))
	bind(b, &p.TakeOverConfirm, "take-over-confirm", catUser, "on a cluster that is not local, take over anyway: without it start refuses and names who the take-over affects (the Deployment, its webhook configurations and their namespaces, the CRDs)", sets("plan.Options.TakeOverConfirm"))
	bind(b, &p.RecordDir, "record-dir", catUser, "write every review and the answer sent into this directory, one JSON file each (Secrets' data redacted)", sets("plan.Options.RecordDir"))
	bind(b, &p.Inspector.Address, "inspector-address", catInspector, "host:port of the inspector, a local page of the last reviews, live (\"\" disables it; loopback unless --inspector-expose; the default falls back to a free loopback port when another hookback holds it)", sets("plan.InspectorConfig.Address", "inspector.Options.Address"))
	bind(b, &p.Inspector.Expose, "inspector-expose", catInspector, "allow an --inspector-address beyond loopback: whoever reaches it sees every review (Secrets' data redacted) and can replay them", sets("plan.InspectorConfig.Expose", "inspector.Options.Expose"))
	bind(b, &p.Inspector.Keep, "inspector-keep", catInspector, "how many of the last reviews the inspector keeps in memory (also bounded to 64 MiB)", sets("plan.InspectorConfig.Keep"))
	bind(b, &p.Tunnel.Enabled, "tunnel", catTunnel, "reach the apiserver's calls through a relay deployed for the session and the apiserver's pod port-forward, for a machine the cluster cannot route to (NAT, a cloud cluster); see docs/tunnel.md", sets("tunnel.Config.Enabled"))
	bind(b, &p.Tunnel.Namespace, "tunnel-namespace", catTunnel, "tunnel: namespace of the session's relay (created when missing, and deleted again by the last session that leaves it)", sets("tunnel.Config.Namespace"))
	bind(b, &p.Tunnel.Image, "relay-image", catTunnel, "tunnel: image that runs the relay (hookback relay; default: this build's released image, :latest for a dev build)", sets("tunnel.Config.Image"))
}

// bindPolicy binds --policy (start and render).
func bindPolicy(b *binder, p *plan.Options) {
	bind(b, &p.Policies.Paths, "policy", catUser, "ValidatingAdmissionPolicies and MutatingAdmissionPolicies (admissionregistration.k8s.io/v1) with their bindings and params (file, directory, kustomize directory, or - for stdin; repeatable): an observer webhook is registered for the resources they match (always allows, scoped like the session), each request is evaluated with the apiserver's own policy code and shown in the inspector and --record-dir, and beside --upstream, the built-ins or --shadow every answer is compared with the policies; hot-reloaded; with --policy-enforce applied to the cluster instead (docs/policies.md)", sets("plan.PolicyInput.Paths"))
}

// config is ServeOptions.config with start's banner writer.
func (o StartOptions) config(ext Extension, log *slog.Logger, out io.Writer) plan.Options {
	p := o.ServeOptions.config(ext, log)
	p.Out = out
	return p
}

// check is ServeOptions.check over start's whole options.
func (o StartOptions) check(ext Extension) error {
	return errors.Join(o.Validate(), o.config(ext, discardLog, io.Discard).Validate())
}

// defaultSession derives <user>-<host> as a DNS label, so names stay valid.
func defaultSession() string { return plan.DefaultSession() }

func sanitizeSession(s string) string { return plan.SanitizeSession(s) }
