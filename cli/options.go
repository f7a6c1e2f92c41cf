package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/hookback/hookback/assembly"
	"github.com/hookback/hookback/builtin/controllers"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/incluster"
	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/project"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/session"
	"github.com/hookback/hookback/tunnel"
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
// by side with their defaults; the inspector's is inspector.DefaultAddress.
const (
	DefaultPort          = session.DefaultPort
	DefaultHealthAddress = session.DefaultHealthAddress
)

// ServeOptions are the flags of start and render: what decides the URL and
// the configurations.
type ServeOptions struct {
	GlobalOptions
	AdvertiseAddress, Session, Template, StateDir, LeaseNamespace string
	Port                                                          int
	TLSMode, TLSCertFile, TLSKeyFile, CAFile                      string
	ACME                                                          certs.ACMEOptions
	// Webhooks and Controllers are comma lists of built-ins, all or none.
	Webhooks, Controllers string
	Webhook               webhooks.Options
	// Your own webhooks: --webhook-config, --upstream...
	WebhookConfig, Upstream []string
	UpstreamCA              string
	UpstreamInsecure        bool
	KeepFailurePolicy       bool
	Timeout                 time.Duration
	// Scope narrows every webhook registered: --namespace, --only-mine...
	Scope registration.Scope
	// Project is --project: a kubebuilder or Operator SDK project root.
	Project string
	// project is the project of project mode, else nil (resolveProject).
	project    *project.Project
	projectErr error
	// upstreamDefaulted: project mode chose the upstream, not the user.
	upstreamDefaulted bool
}

func defaultServeOptions() ServeOptions {
	return ServeOptions{GlobalOptions: defaultGlobalOptions(), StateDir: defaultStateDir(), LeaseNamespace: session.DefaultLeaseNamespace,
		Port: DefaultPort, TLSMode: certs.ModeSelfSigned, Webhooks: "all", Controllers: "all", Webhook: webhooks.DefaultOptions(),
		ACME: certs.ACMEOptions{CA: certs.LetsEncryptCA, Profile: "shortlived", HTTPPort: 80, RenewCheckInterval: 10 * time.Minute}}
}

func (o *ServeOptions) bind(b *binder) {
	o.GlobalOptions.bind(b)
	bind(b, &o.Session, "session", catCluster, "session name: suffixes every object hookback writes (default: <user>-<host>)", sets("session.Options.Session", "registration.Heartbeat.Session"))
	bind(b, &o.LeaseNamespace, "lease-namespace", catCluster, "namespace for the session Lease and the canary ConfigMap", sets("session.Options.LeaseNamespace"))
	bind(b, &o.AdvertiseAddress, "advertise-address", catServing, "IP or DNS name the apiserver dials to reach hookback (default: decided from the kubeconfig's server, see docs/reachability.md)", sets("session.Options.AdvertiseAddress", "advertise.Input.Explicit"))
	bind(b, &o.Port, "port", catServing, "HTTPS port for the webhooks", sets("session.Options.Port"))
	bind(b, &o.Template, "template", catServing, "webhook configuration template (default: the built-in webhook-url.yaml.tmpl); hot-reloaded while running")
	bind(b, &o.StateDir, "state-dir", catServing, "where the local CA and certificates live")
	bind(b, &o.TLSMode, "tls-mode", catServing, "self-signed (a local CA in --state-dir), acme (a certificate from an ACME CA, --acme-*) or files (--tls-cert-file, --tls-key-file, --ca-file)", sets("certs.Options.Mode"))
	bind(b, &o.TLSCertFile, "tls-cert-file", catServing, "files mode: serving certificate (PEM, may include the chain); reloaded on change", sets("certs.Options.CertFile"))
	bind(b, &o.TLSKeyFile, "tls-key-file", catServing, "files mode: its private key; reloaded on change", sets("certs.Options.KeyFile"))
	bind(b, &o.CAFile, "ca-file", catServing, "files and acme modes: CA the apiserver should trust (the caBundle); empty when the certificate is publicly trusted", sets("certs.Options.CAFile"))
	bind(b, &o.ACME.CA, "acme-ca", catServing, "acme mode: ACME directory URL; using it agrees to the CA's terms of service", sets("certs.ACMEOptions.CA"))
	bind(b, &o.ACME.Email, "acme-email", catServing, "acme mode: contact email for the ACME account (optional)", sets("certs.ACMEOptions.Email"))
	bind(b, &o.ACME.CARootFile, "acme-ca-root", catServing, "acme mode: PEM root to trust for the ACME server's own HTTPS (a private ACME server such as pebble)", sets("certs.ACMEOptions.CARootFile"))
	bind(b, &o.ACME.Profile, "acme-profile", catServing, "acme mode: ACME profile to order under (Let's Encrypt issues IP certificates only under shortlived); empty: the CA's default", sets("certs.ACMEOptions.Profile"))
	bind(b, &o.ACME.HTTPPort, "acme-http-port", catServing, "acme mode: port the HTTP-01 challenge is answered on, opened only while a challenge is pending (the CA always dials port 80: forward it here when different)", sets("certs.ACMEOptions.HTTPPort"))
	bind(b, &o.ACME.RenewCheckInterval, "acme-renew-check-interval", catServing, "acme mode: how often certmagic checks whether to renew", hidden)
	o.bindWhatRuns(b)
	bindWebhookOptions(b, &o.Webhook)
	o.bindUpstream(b)
	bind(b, &o.KeepFailurePolicy, "keep-failure-policy", catUser, "your webhooks: keep each failurePolicy; without it every one becomes Ignore, so a stopped debugger never blocks the cluster", sets("session.UserWebhooks.KeepFailurePolicy"))
	bind(b, &o.Timeout, "timeout", catUser, "your webhooks: override every timeoutSeconds, 1s to 30s (30s while stepping through a handler in a debugger); 0 keeps each one's", sets("session.UserWebhooks.Timeout"))
	bindScope(b, &o.Scope)
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
// it needs (check binds them too): the built-ins selected, your manifests.
func (o *ServeOptions) bindWhatRuns(b *binder) {
	bind(b, &o.Webhooks, "webhooks", catBuiltins, "comma list of built-in webhooks to serve, or all or none ("+strings.Join(webhooks.Names(), ", ")+")")
	bind(b, &o.Controllers, "controllers", catBuiltins, "comma list of controllers to run, or all or none ("+strings.Join(controllers.Names(), ", ")+")")
	bind(b, &o.Project, "project", catUser, "kubebuilder or Operator SDK project root (default: the current directory when it has a PROJECT file and no --webhook-config is given): its config/default, built-ins off, --upstream "+project.DefaultUpstream)
	bind(b, &o.WebhookConfig, "webhook-config", catUser, "your webhook configurations and CRDs as written for the cluster (file, directory, kustomize directory, bundle such as dist/install.yaml, or - for stdin; repeatable): rewritten to point at hookback, other kinds skipped", sets("session.UserWebhooks.Manifests"))
}

// bindUpstream binds where your webhooks' reviews go.
func (o *ServeOptions) bindUpstream(b *binder) {
	bind(b, &o.Upstream, "upstream", catUser, "your webhook server, where hookback forwards their reviews: URL, or NAMESPACE/SERVICE=URL for the webhooks of one Service (repeatable)", sets("session.UserWebhooks.Upstream"))
	bind(b, &o.UpstreamCA, "upstream-ca", catUser, "CA file to trust an https upstream", sets("session.UserWebhooks.UpstreamCA", "upstream.Options.CAFile"))
	bind(b, &o.UpstreamInsecure, "upstream-insecure", catUser, "do not verify an https upstream's certificate (loopback upstreams only)", sets("session.UserWebhooks.UpstreamInsecure", "upstream.Options.Insecure"))
}

// bindWebhookOptions binds the built-in webhooks' own options.
func bindWebhookOptions(b *binder, o *webhooks.Options) {
	bind(b, &o.BannedWords, "banned-words", catBuiltins, "pod-name: words a pod name must not contain", sets("webhooks.Options.BannedWords"))
	bind(b, &o.SidecarImage, "sidecar-image", catBuiltins, "pod-sidecar: image of the injected xxl-agent container", sets("webhooks.Options.SidecarImage"))
	bind(b, &o.CPUOversellFactor, "cpu-oversell-factor", catBuiltins, "node-status: multiply node allocatable CPU by this (1 disables)", sets("webhooks.Options.CPUOversellFactor"))
}

// user reads the flags of your own webhooks; the library parses the
// upstreams (session.UserWebhooks.ParseUpstreams, in Complete).
func (o ServeOptions) user() session.UserWebhooks {
	return session.UserWebhooks{Manifests: o.WebhookConfig, Stdin: os.Stdin, Upstream: o.Upstream, UpstreamCA: o.UpstreamCA,
		UpstreamInsecure: o.UpstreamInsecure, KeepFailurePolicy: o.KeepFailurePolicy, Timeout: o.Timeout}
}

// Validate reports the flags' own problems: their syntax (lists, upstream
// specs, the log settings) and the project. Every rule of the Config itself
// lives once in the library (session.Options.Validate), which Run, Render
// and Audit run.
func (o ServeOptions) Validate() error {
	_, userErr := o.user().ParseUpstreams()
	return errors.Join(o.GlobalOptions.Validate(), userErr, o.projectErr, validateSelection(o.Webhooks, o.Controllers))
}

// check is Validate; when the flags already fail, the Config's problems are
// added, so every problem is reported at once. Otherwise the library
// validates the Config, once.
func (o ServeOptions) check(ext Extension) error {
	if err := o.Validate(); err != nil {
		return errors.Join(err, o.config(ext, discardLog).Validate())
	}
	return nil
}

var discardLog = slog.New(slog.DiscardHandler)

// configUsage shows what the library's validation reports as a usage
// error, like the flags' own problems.
func configUsage(err error) error {
	if errors.Is(err, session.ErrInvalidConfig) || errors.Is(err, incluster.ErrInvalidConfig) {
		return usage(err)
	}
	return err
}

// validateSelection checks --webhooks and --controllers.
func validateSelection(webhooks, controllers string) error {
	var errs []error
	if _, err := assembly.SelectWebhooks(splitList(webhooks)); err != nil {
		errs = append(errs, fmt.Errorf("--webhooks: %w", err))
	}
	if _, err := assembly.SelectControllers(splitList(controllers)); err != nil {
		errs = append(errs, fmt.Errorf("--controllers: %w", err))
	}
	return errors.Join(errs...)
}

func splitList(s string) []string { return strings.Split(s, ",") }

func (o ServeOptions) certs() certs.Options {
	return certs.Options{Mode: o.TLSMode, StateDir: o.StateDir, CertFile: o.TLSCertFile, KeyFile: o.TLSKeyFile, CAFile: o.CAFile, ACME: o.ACME}
}

// config is the session Config of these options; call after Validate.
func (o ServeOptions) config(ext Extension, log *slog.Logger) session.Options {
	hooks, _ := assembly.SelectWebhooks(splitList(o.Webhooks))
	ctls, _ := assembly.SelectControllers(splitList(o.Controllers))
	user := o.user()
	name := o.Session
	if name == "" {
		name = defaultSession()
	}
	co := o.certs()
	co.Log = log
	return session.Options{
		Kubeconfig: o.kubeconfig(), Session: name, AdvertiseAddress: o.AdvertiseAddress, Port: o.Port,
		Template: registration.Template{Path: o.Template, Default: ext.Template}, Certs: co,
		LeaseNamespace: o.LeaseNamespace, Webhooks: hooks, Controllers: ctls, WebhookOptions: o.Webhook,
		Extra: ext.Webhooks, User: user, Project: o.project, Scope: o.Scope, Log: log,
	}
}

// StartOptions are start's flags.
type StartOptions struct {
	ServeOptions
	RecordDir                    string
	BindAddress, HealthAddress   string
	Inspector                    session.InspectorConfig
	NoVerify                     bool
	VerifyTimeout, LeaseDuration time.Duration
	Tunnel                       tunnel.Config
	// UpstreamCertDir gets a serving certificate for your webhook server.
	UpstreamCertDir string
	// LateAnswerTimeout bounds how long a late answer is still read.
	LateAnswerTimeout time.Duration
	// Shadow and ShadowCA: the deployed webhook to compare with.
	Shadow, ShadowCA string
	// Fault makes your webhooks misbehave on purpose (package fault).
	Fault string
	// Chain registers the admission chain's observers (docs/chain.md);
	// ChainAuditLog is the apiserver's audit log, for exact attribution.
	Chain         bool
	ChainAuditLog string
	// Policies are --policy and --policy-enforce (cli/start_policy.go).
	Policies startPolicyOptions
	// TakeOver are the deployed operators to pause (docs/take-over.md).
	TakeOver []string
	// TakeOverConfirm allows TakeOver off a local cluster.
	TakeOverConfirm bool
}

func defaultStartOptions() StartOptions {
	return StartOptions{ServeOptions: defaultServeOptions(), HealthAddress: DefaultHealthAddress,
		VerifyTimeout: session.DefaultVerifyTimeout, LeaseDuration: session.DefaultLeaseDuration, LateAnswerTimeout: session.DefaultLateAnswerTimeout,
		Inspector: session.InspectorConfig{Address: inspector.DefaultAddress, Keep: inspector.DefaultKeep},
		Tunnel:    tunnel.Config{Namespace: tunnel.DefaultNamespace, Image: defaultImage(version())}}
}

func (o *StartOptions) bind(b *binder) {
	o.ServeOptions.bind(b)
	bind(b, &o.LeaseDuration, "lease-duration", catCluster, "how long the session survives without a heartbeat before another run may clean it up", sets("session.Options.LeaseDuration"))
	bind(b, &o.BindAddress, "bind-address", catServing, "address to listen on (default: the advertise address when it is this machine's, else all interfaces)", sets("session.Options.BindAddress"))
	bind(b, &o.HealthAddress, "health-address", catServing, "host:port for /healthz, /readyz and /metrics", sets("session.Options.HealthAddress"))
	bind(b, &o.NoVerify, "no-verify", catServing, "keep running (and log the diagnosis) when verification shows the apiserver cannot reach hookback")
	bind(b, &o.VerifyTimeout, "verify-timeout", catServing, "how long verification may take", sets("session.Options.VerifyTimeout"))
	bind(b, &o.UpstreamCertDir, "upstream-cert-dir", catUser, "write a serving certificate for your webhook server here (tls.crt, tls.key, signed by hookback's CA, which then verifies it); never over one hookback did not write (default in project mode: controller-runtime's, $TMPDIR/k8s-webhook-server/serving-certs)", sets("session.UserWebhooks.CertDir"))
	bind(b, &o.LateAnswerTimeout, "late-answer-timeout", catUser, "your webhooks: how long an answer is still awaited after the apiserver stopped waiting (a breakpoint); it is then logged, shown in the inspector and recorded as late (0 disables)")
	bind(b, &o.Shadow, "shadow", catUser, "compare your webhooks with the ones deployed in the cluster: NAMESPACE/SERVICE[:PORT] (through the apiserver's service proxy) or an https URL (with a path: used as is; without: each webhook's path appended); hookback's copies then always allow, and differences are logged, counted and summed up at exit", sets("session.ShadowConfig.Target", "upstream.ShadowTarget.URL", "upstream.ShadowTarget.Proxy", "upstream.ServiceRef.Name", "upstream.ServiceRef.Port"))
	bind(b, &o.ShadowCA, "shadow-ca", catUser, "CA file to verify an https --shadow URL (default: the system roots)", sets("session.ShadowConfig.CAFile", "upstream.ShadowTarget.CAFile"))
	bind(b, &o.Fault, "fault", catUser, "your webhooks misbehave on purpose, to watch the cluster while they are down or slow: refuse, timeout (never answers), error (HTTP 500) or slow=DUR (answers after DUR); the apiserver applies each webhook's failurePolicy (Ignore unless --keep-failure-policy)", sets("session.UserWebhooks.Fault"))
	bind(b, &o.Chain, "chain", catUser, "register observer webhooks sorted first and last among mutating configurations and a validating one, scoped like your webhooks, and show per request what every other webhook and policy changed before and after yours, in the inspector and --record-dir (docs/chain.md)", sets("session.Options.Chain"))
	bind(b, &o.ChainAuditLog, "chain-audit-log", catUser, "with --chain: the apiserver's audit log file (JSON lines, level Request for writes), where this machine can read it (the local control plane's .cache/cluster/audit.log): each change is then named from the apiserver's own patch annotations, and the policies' changes shown against the object as the client sent it", sets("session.Options.ChainAuditLog"))
	o.Policies.bind(b)
	o.Policies.bindEnforce(b)
	bind(b, &o.TakeOver, "take-over", catUser, "[NAMESPACE/]deployment/NAME: pause your operator deployed in the cluster for the session (scaled to 0, its webhook configurations and CRD conversions pointed at hookback under their own names, the Lease its manager leads with released) and give it back exactly at exit (repeatable; without NAMESPACE: the one -n, else your manifests' namespace; docs/take-over.md)", sets("session.Options.TakeOver"))
	bind(b, &o.TakeOverConfirm, "take-over-confirm", catUser, "on a cluster that is not local, take over anyway: without it start refuses and names who the take-over affects (the Deployment, its webhook configurations and their namespaces, the CRDs)", sets("session.Options.TakeOverConfirm"))
	bind(b, &o.RecordDir, "record-dir", catUser, "write every review and the answer sent into this directory, one JSON file each (Secrets' data redacted)", sets("session.Options.RecordDir"))
	bind(b, &o.Inspector.Address, "inspector-address", catInspector, "host:port of the inspector, a local page of the last reviews, live (\"\" disables it; loopback unless --inspector-expose)", sets("session.InspectorConfig.Address", "inspector.Options.Address"))
	bind(b, &o.Inspector.Expose, "inspector-expose", catInspector, "allow an --inspector-address beyond loopback: whoever reaches it sees every review (Secrets' data redacted) and can replay them", sets("session.InspectorConfig.Expose", "inspector.Options.Expose"))
	bind(b, &o.Inspector.Keep, "inspector-keep", catInspector, "how many of the last reviews the inspector keeps in memory (also bounded to 64 MiB)", sets("session.InspectorConfig.Keep"))
	bind(b, &o.Tunnel.Enabled, "tunnel", catTunnel, "reach the apiserver's calls through a relay deployed for the session and the apiserver's pod port-forward, for a machine the cluster cannot route to (NAT, a cloud cluster); see docs/tunnel.md", sets("tunnel.Config.Enabled"))
	bind(b, &o.Tunnel.Namespace, "tunnel-namespace", catTunnel, "tunnel: namespace of the session's relay (created when missing, and deleted again by the last session that leaves it)", sets("tunnel.Config.Namespace"))
	bind(b, &o.Tunnel.Image, "relay-image", catTunnel, "tunnel: image that runs the relay (hookback relay); a dev build defaults to :latest", sets("tunnel.Config.Image"))
}

// Validate is ServeOptions.Validate and start's own flags' syntax.
func (o StartOptions) Validate() error {
	var late error
	if o.LateAnswerTimeout < 0 {
		late = fmt.Errorf("--late-answer-timeout %s: want 0 (off) or more", o.LateAnswerTimeout)
	}
	return errors.Join(o.ServeOptions.Validate(), late, o.Policies.Validate(o.WebhookConfig))
}

// check is ServeOptions.check over start's whole Config.
func (o StartOptions) check(ext Extension) error {
	if err := o.Validate(); err != nil {
		return errors.Join(err, o.config(ext, discardLog, io.Discard, false).Validate())
	}
	return nil
}

func (o StartOptions) config(ext Extension, log *slog.Logger, out io.Writer, inspectorDefault bool) session.Options {
	cfg := o.ServeOptions.config(ext, log)
	cfg.BindAddress, cfg.HealthAddress = o.BindAddress, o.HealthAddress
	cfg.RequireVerified, cfg.VerifyTimeout, cfg.LeaseDuration = !o.NoVerify, o.VerifyTimeout, o.LeaseDuration
	cfg.Out, cfg.RecordDir, cfg.Inspector, cfg.Tunnel, cfg.Chain = out, o.RecordDir, o.Inspector, o.Tunnel, o.Chain
	cfg.ChainAuditLog, cfg.TakeOver, cfg.TakeOverConfirm = o.ChainAuditLog, o.TakeOver, o.TakeOverConfirm
	cfg.User.CertDir = o.UpstreamCertDir
	o.Policies.apply(&cfg, os.Stdin)
	cfg.User.LateAnswerTimeout, cfg.User.Shadow, cfg.User.Fault = o.LateAnswerTimeout, o.shadow(), o.Fault
	if o.LateAnswerTimeout == 0 {
		cfg.User.LateAnswerTimeout = session.LateAnswersOff // the flag's 0; the library's 0 is the default
	}
	if o.project != nil && cfg.User.CertDir == "" {
		cfg.User.CertDir = certs.ControllerRuntimeCertDir()
	}
	// Another hookback may hold the default inspector address: then a free
	// loopback port serves instead. An address the user chose must be it.
	cfg.Inspector.Fallback = inspectorDefault
	// make run points this at the local control plane's kubectl when none
	// is on PATH, so the banner's suggestions work as printed.
	cfg.Kubectl = os.Getenv("HOOKBACK_KUBECTL")
	return cfg
}

func (o StartOptions) shadow() session.ShadowConfig {
	return session.ShadowConfig{Target: o.Shadow, CAFile: o.ShadowCA}
}

// defaultSession derives <user>-<host> as a DNS label, so names stay valid.
func defaultSession() string { return session.DefaultSession() }

func sanitizeSession(s string) string { return session.SanitizeSession(s) }
