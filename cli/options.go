package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"regexp"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/klog/v2"

	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/session"
	"github.com/hookback/hookback/webhook"
)

// GlobalOptions are the flags every command takes.
type GlobalOptions struct {
	Kubeconfig, Context string
	LogFormat, LogLevel string
}

func globalOptions(c *cli.Context) GlobalOptions {
	return GlobalOptions{Kubeconfig: str(c, "kubeconfig"), Context: str(c, "context"),
		LogFormat: str(c, "log-format"), LogLevel: str(c, "log-level")}
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
	opts := &slog.HandlerOptions{Level: level}
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

// ServeOptions are the flags of start and render: what decides the URL and
// the configurations.
type ServeOptions struct {
	GlobalOptions
	AdvertiseAddress, Session, Template, StateDir, LeaseNamespace string
	Port                                                          int
	TLSMode, TLSCertFile, TLSKeyFile, CAFile                      string
	ACME                                                          certs.ACMEOptions
	Webhooks, Controllers                                         []string
	Webhook                                                       webhook.Options
	// User are your own webhooks: --webhook-config, --upstream...
	User    session.UserWebhooks
	userErr error
}

func serveOptions(c *cli.Context) ServeOptions {
	o := ServeOptions{
		GlobalOptions:    globalOptions(c),
		AdvertiseAddress: c.String("advertise-address"), Session: c.String("session"), Template: c.String("template"),
		StateDir: c.String("state-dir"), LeaseNamespace: c.String("lease-namespace"), Port: c.Int("port"),
		TLSMode: c.String("tls-mode"), TLSCertFile: c.String("tls-cert-file"), TLSKeyFile: c.String("tls-key-file"),
		CAFile: c.String("ca-file"),
		ACME: certs.ACMEOptions{CA: c.String("acme-ca"), Email: c.String("acme-email"), CARootFile: c.String("acme-ca-root"),
			Profile: c.String("acme-profile"), HTTPPort: c.Int("acme-http-port"), RenewCheckInterval: c.Duration("acme-renew-check-interval")},
		Webhooks: strings.Split(c.String("webhooks"), ","), Controllers: strings.Split(c.String("controllers"), ","),
		Webhook: webhookOptions(c),
	}
	o.User, o.userErr = userWebhooks(c)
	o.User.KeepFailurePolicy, o.User.Timeout = c.Bool("keep-failure-policy"), c.Duration("timeout")
	return o
}

// webhookOptions reads the built-in webhooks' flags.
func webhookOptions(c *cli.Context) webhook.Options {
	return webhook.Options{BannedWords: c.StringSlice("banned-words"), SidecarImage: c.String("sidecar-image"),
		CPUOversellFactor: c.Float64("cpu-oversell-factor")}
}

// webhookOptionFlags spells each webhook option as the flag that sets it.
var webhookOptionFlags = map[string]string{
	webhook.OptionBannedWords:       "--banned-words",
	webhook.OptionSidecarImage:      "--sidecar-image",
	webhook.OptionCPUOversellFactor: "--cpu-oversell-factor",
}

// validateWebhookOptions is o.Validate with each problem naming its flag.
func validateWebhookOptions(o webhook.Options) error {
	err := o.Validate()
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err
	}
	var errs []error
	for _, e := range joined.Unwrap() {
		var oe *webhook.OptionError
		if errors.As(e, &oe) && webhookOptionFlags[oe.Option] != "" {
			e = fmt.Errorf("%s %s: want %s", webhookOptionFlags[oe.Option], oe.Value, oe.Want)
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// userWebhooks reads the flags of your own webhooks.
func userWebhooks(c *cli.Context) (session.UserWebhooks, error) {
	u := session.UserWebhooks{Manifests: c.StringSlice("webhook-config"), Stdin: os.Stdin,
		UpstreamCA: c.String("upstream-ca"), UpstreamInsecure: c.Bool("upstream-insecure")}
	var errs []error
	for _, s := range c.StringSlice("upstream") {
		up, err := session.ParseUpstream(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		u.Upstreams = append(u.Upstreams, up)
	}
	return u, errors.Join(errs...)
}

// Validate reports every problem at once.
func (o ServeOptions) Validate() error {
	errs := []error{o.GlobalOptions.Validate(), o.certs().Validate(), validateWebhookOptions(o.Webhook), o.userErr, o.User.Validate()}
	if o.Session != "" && sanitizeSession(o.Session) != o.Session {
		errs = append(errs, fmt.Errorf("--session %q: use lowercase letters, digits and '-', at most 40 characters", o.Session))
	}
	if o.Port < 1 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("--port %d: want a TCP port, 1 to 65535", o.Port))
	}
	if _, err := session.SelectWebhooks(o.Webhooks); err != nil {
		errs = append(errs, fmt.Errorf("--webhooks: %w", err))
	}
	if _, err := session.SelectControllers(o.Controllers); err != nil {
		errs = append(errs, fmt.Errorf("--controllers: %w", err))
	}
	return errors.Join(errs...)
}

func (o ServeOptions) certs() certs.Options {
	return certs.Options{Mode: o.TLSMode, StateDir: o.StateDir, CertFile: o.TLSCertFile, KeyFile: o.TLSKeyFile, CAFile: o.CAFile, ACME: o.ACME}
}

// config is the session Config of these options; call after Validate.
func (o ServeOptions) config(ext Extension, log *slog.Logger) session.Config {
	hooks, _ := session.SelectWebhooks(o.Webhooks)
	ctls, _ := session.SelectControllers(o.Controllers)
	name := o.Session
	if name == "" {
		name = defaultSession()
	}
	co := o.certs()
	co.Log = log
	return session.Config{
		Kubeconfig: o.kubeconfig(), Session: name, AdvertiseAddress: o.AdvertiseAddress, Port: o.Port,
		Template: registration.Template{Path: o.Template, Default: ext.Template}, Certs: co,
		LeaseNamespace: o.LeaseNamespace, Webhooks: hooks, Controllers: ctls, WebhookOptions: o.Webhook,
		Extra: ext.Webhooks, User: o.User, Log: log,
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
	Tunnel                       session.TunnelConfig
}

func startOptions(c *cli.Context) StartOptions {
	s := serveOptions(c)
	s.User.LateAnswerTimeout = c.Duration("late-answer-timeout")
	s.User.Shadow = session.ShadowConfig{Target: c.String("shadow"), CAFile: c.String("shadow-ca")}
	return StartOptions{ServeOptions: s, RecordDir: c.String("record-dir"), BindAddress: c.String("bind-address"),
		HealthAddress: c.String("health-address"), NoVerify: c.Bool("no-verify"),
		VerifyTimeout: c.Duration("verify-timeout"), LeaseDuration: c.Duration("lease-duration"),
		Inspector: session.InspectorConfig{Address: c.String("inspector-address"), Expose: c.Bool("inspector-expose"),
			Keep: c.Int("inspector-keep"), Fallback: !c.IsSet("inspector-address")},
		Tunnel: session.TunnelConfig{Enabled: c.Bool("tunnel"), Namespace: c.String("tunnel-namespace"), Image: c.String("relay-image")}}
}

// Validate reports every problem at once.
func (o StartOptions) Validate() error {
	errs := []error{o.ServeOptions.Validate()}
	if o.VerifyTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--verify-timeout %s: want more than 0", o.VerifyTimeout))
	}
	if o.User.LateAnswerTimeout < 0 {
		errs = append(errs, fmt.Errorf("--late-answer-timeout %s: want 0 (off) or more", o.User.LateAnswerTimeout))
	}
	if o.LeaseDuration < time.Second {
		errs = append(errs, fmt.Errorf("--lease-duration %s: want at least 1s", o.LeaseDuration))
	}
	errs = append(errs, o.Tunnel.Validate(o.AdvertiseAddress, o.TLSMode))
	if o.Inspector.Keep < 1 {
		errs = append(errs, fmt.Errorf("--inspector-keep %d: want at least 1", o.Inspector.Keep))
	}
	if a := o.Inspector.Address; a != "" && !o.Inspector.Expose && !inspector.IsLoopback(a) {
		errs = append(errs, fmt.Errorf("--inspector-address %s: want a loopback host:port such as %s, or pass --inspector-expose", a, inspector.DefaultAddress))
	}
	return errors.Join(errs...)
}

func (o StartOptions) config(ext Extension, log *slog.Logger, out io.Writer) session.Config {
	cfg := o.ServeOptions.config(ext, log)
	cfg.BindAddress, cfg.HealthAddress = o.BindAddress, o.HealthAddress
	cfg.RequireVerified, cfg.VerifyTimeout, cfg.LeaseDuration = !o.NoVerify, o.VerifyTimeout, o.LeaseDuration
	cfg.Out, cfg.RecordDir, cfg.Inspector, cfg.Tunnel = out, o.RecordDir, o.Inspector, o.Tunnel
	// make run points this at the local control plane's kubectl when none
	// is on PATH, so the banner's suggestions work as printed.
	cfg.Kubectl = os.Getenv("HOOKBACK_KUBECTL")
	return cfg
}

var notDNSLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// defaultSession derives <user>-<host> as a DNS label, so names stay valid.
func defaultSession() string {
	name := "hookback"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		name += "-" + strings.SplitN(h, ".", 2)[0]
	}
	return sanitizeSession(name)
}

func sanitizeSession(s string) string {
	s = notDNSLabel.ReplaceAllString(strings.ToLower(s), "-")
	if len(s) > 40 {
		s = s[:40]
	}
	return strings.Trim(s, "-")
}
