package cli

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/controller"
	"github.com/hookback/hookback/incluster"
	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/session"
	"github.com/hookback/hookback/upstream"
	"github.com/hookback/hookback/webhook"
)

// envVar names the environment variable that backs a flag.
func envVar(flag string) []string {
	return []string{"HOOKBACK_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))}
}

// globalFlagNames work before and after the subcommand, as kubectl users
// type them.
var globalFlagNames = []string{"kubeconfig", "context", "log-format", "log-level"}

// newFlag returns a fresh definition of the named flag: each flag is
// declared here once, and urfave/cli flags keep parse state, so every
// command gets its own instance.
func newFlag(name string) cli.Flag { return newFlagText(name, flagText[name]) }

// newFlagText is newFlag with usage as its help.
func newFlagText(name, usage string) cli.Flag {
	d := webhook.DefaultOptions()
	value := flagDefault(name)
	switch name {
	case "port", "acme-http-port", "inspector-keep", "replicas", "concurrency":
		return &cli.IntFlag{Name: name, EnvVars: envVar(name), Value: value.(int), Usage: usage}
	case "no-verify", "all", "bundle", "upstream-insecure", "keep-failure-policy", "inspector-expose", "in-cluster", "cert-manager", "tunnel":
		return &cli.BoolFlag{Name: name, EnvVars: envVar(name), Usage: usage}
	case "verify-timeout", "lease-duration", "timeout", "request-timeout", "acme-renew-check-interval", "shutdown-delay", "wait", "late-answer-timeout":
		return &cli.DurationFlag{Name: name, EnvVars: envVar(name), Value: value.(time.Duration), Usage: usage,
			Hidden: name == "acme-renew-check-interval"}
	case "webhook-config", "upstream":
		return &cli.StringSliceFlag{Name: name, EnvVars: envVar(name), Usage: usage}
	case "output":
		return &cli.StringFlag{Name: name, Aliases: []string{"o"}, EnvVars: envVar(name), Value: value.(string), Usage: usage}
	case "banned-words":
		return &cli.StringSliceFlag{Name: name, EnvVars: envVar(name), Value: cli.NewStringSlice(d.BannedWords...), Usage: usage}
	case "cpu-oversell-factor":
		return &cli.Float64Flag{Name: name, EnvVars: envVar(name), Value: d.CPUOversellFactor, Usage: usage}
	default:
		s, _ := value.(string)
		return &cli.StringFlag{Name: name, EnvVars: envVar(name), Value: s, Usage: usage}
	}
}

func flags(names ...string) []cli.Flag {
	out := make([]cli.Flag, 0, len(names)+len(globalFlagNames))
	for _, n := range names {
		out = append(out, newFlag(n))
	}
	return out
}

// withGlobal adds the global flags to a command's own, so they also work
// after the subcommand; lookup reads whichever the user set.
func withGlobal(names ...string) []cli.Flag {
	return append(flags(names...), flags(globalFlagNames...)...)
}

// withGlobalText is withGlobal with the help of the flags in text
// rewritten: flags a command shares with start by name but reads otherwise
// (check --tunnel checks what start --tunnel needs; it deploys nothing).
func withGlobalText(text map[string]string, names ...string) []cli.Flag {
	fl := withGlobal(names...)
	for i, f := range fl {
		if u, ok := text[f.Names()[0]]; ok {
			fl[i] = newFlagText(f.Names()[0], u)
		}
	}
	return fl
}

func flagDefault(name string) any {
	switch name {
	case "port":
		return 8443
	case "acme-http-port":
		return 80
	case "verify-timeout":
		return 15 * time.Second
	case "lease-duration":
		return 30 * time.Second
	case "request-timeout":
		return 10 * time.Second
	case "shutdown-delay":
		return incluster.DefaultShutdownDelay
	case "wait":
		return time.Minute
	case "listen":
		return ":8443"
	case "control":
		return ":9443"
	case "timeout":
		return time.Duration(0)
	case "acme-renew-check-interval":
		return 10 * time.Minute
	case "log-format":
		return "text"
	case "log-level":
		return "info"
	case "webhooks", "controllers":
		return "all"
	case "health-address":
		return "127.0.0.1:8081"
	case "inspector-address":
		return inspector.DefaultAddress
	case "inspector-keep":
		return inspector.DefaultKeep
	case "lease-namespace":
		return "default"
	case "state-dir":
		return defaultStateDir()
	case "tls-mode":
		return certs.ModeSelfSigned
	case "acme-ca":
		return certs.LetsEncryptCA
	case "acme-profile":
		return "shortlived"
	case "sidecar-image":
		return webhook.DefaultSidecarImage
	case "subject":
		return "group:hookback-developers"
	case "rbac-name":
		return "hookback-developer"
	case "namespace":
		return incluster.DefaultNamespace
	case "tunnel-namespace":
		return session.DefaultTunnelNamespace
	case "relay-image":
		return defaultImage(version())
	case "replicas":
		return incluster.DefaultReplicas
	case "late-answer-timeout":
		return upstream.DefaultLateAnswerTimeout
	case "output":
		return "table"
	case "fail-on":
		return "denied"
	case "concurrency":
		return 8
	}
	return ""
}

var flagText = map[string]string{
	"kubeconfig":                "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)",
	"context":                   "kubeconfig context to use instead of current-context",
	"log-format":                "log format: text or json",
	"log-level":                 "log level: debug, info, warn or error",
	"advertise-address":         "IP or DNS name the apiserver dials to reach hookback (default: decided from the kubeconfig's server, see docs/reachability.md)",
	"port":                      "HTTPS port for the webhooks",
	"session":                   "session name: suffixes every object hookback writes (default: <user>-<host>)",
	"template":                  "webhook configuration template (default: the built-in webhook-url.yaml.tmpl); hot-reloaded while running",
	"state-dir":                 "where the local CA and certificates live",
	"lease-namespace":           "namespace for the session Lease and the canary ConfigMap",
	"tls-mode":                  "self-signed (a local CA in --state-dir), acme (a certificate from an ACME CA, --acme-*) or files (--tls-cert-file, --tls-key-file, --ca-file)",
	"tls-cert-file":             "files mode: serving certificate (PEM, may include the chain); reloaded on change",
	"tls-key-file":              "files mode: its private key; reloaded on change",
	"ca-file":                   "files and acme modes: CA the apiserver should trust (the caBundle); empty when the certificate is publicly trusted",
	"acme-ca":                   "acme mode: ACME directory URL; using it agrees to the CA's terms of service",
	"acme-email":                "acme mode: contact email for the ACME account (optional)",
	"acme-ca-root":              "acme mode: PEM root to trust for the ACME server's own HTTPS (a private ACME server such as pebble)",
	"acme-profile":              "acme mode: ACME profile to order under (Let's Encrypt issues IP certificates only under shortlived); empty: the CA's default",
	"acme-http-port":            "acme mode: port the HTTP-01 challenge is answered on, opened only while a challenge is pending (the CA always dials port 80: forward it here when different)",
	"acme-renew-check-interval": "acme mode: how often certmagic checks whether to renew",
	"bind-address":              "address to listen on (default: the advertise address when it is this machine's, else all interfaces)",
	"health-address":            "host:port for /healthz, /readyz and /metrics",
	"no-verify":                 "keep running (and log the diagnosis) when verification shows the apiserver cannot reach hookback",
	"verify-timeout":            "how long verification may take",
	"lease-duration":            "how long the session survives without a heartbeat before another run may clean it up",
	"webhooks":                  "comma list of built-in webhooks to serve, or all or none (" + strings.Join(webhook.Names(), ", ") + ")",
	"controllers":               "comma list of controllers to run, or all or none (" + strings.Join(controller.Names(), ", ") + ")",
	"banned-words":              "pod-name: words a pod name must not contain",
	"sidecar-image":             "pod-sidecar: image of the injected xxl-agent container",
	"cpu-oversell-factor":       "node-status: multiply node allocatable CPU by this (1 disables)",
	"request-timeout":           "give up on the apiserver after this long",
	"timeout":                   "your webhooks: override every timeoutSeconds, 1s to 30s (30s while stepping through a handler in a debugger); 0 keeps each one's",
	"webhook-config":            "your webhook configurations as written for the cluster (file, directory or - for stdin; repeatable): rewritten to point at hookback",
	"upstream":                  "your webhook server, where hookback forwards their reviews: URL, or NAMESPACE/SERVICE=URL for the webhooks of one Service (repeatable)",
	"upstream-ca":               "CA file to trust an https upstream",
	"upstream-insecure":         "do not verify an https upstream's certificate (loopback upstreams only)",
	"keep-failure-policy":       "your webhooks: keep each failurePolicy; without it every one becomes Ignore, so a stopped debugger never blocks the cluster",
	"record-dir":                "write every review and the answer sent into this directory, one JSON file each (Secrets' data redacted)",
	"inspector-address":         "host:port of the inspector, a local page of the last reviews, live (\"\" disables it; loopback unless --inspector-expose)",
	"inspector-expose":          "allow an --inspector-address beyond loopback: whoever reaches it sees every review (Secrets' data redacted) and can replay them",
	"inspector-keep":            "how many of the last reviews the inspector keeps in memory (also bounded to 64 MiB)",
	"all":                       "remove every session, alive or not",
	"bundle":                    "print the base64 caBundle instead of PEM",
	"webhook":                   "built-in webhook to run (" + strings.Join(webhook.Names(), ", ") + ")",
	"subject":                   "who the bindings name: user:NAME, group:NAME or serviceaccount:NAMESPACE/NAME",
	"rbac-name":                 "name of the ClusterRole, Role and bindings",
	"in-cluster":                "print everything to deploy hookback in the cluster instead (Namespace, RBAC, Deployment, Service, webhook configurations with service references)",
	"namespace":                 "in-cluster: the install's namespace (its Service, the CA Secret, the leader election Lease)",
	"listen":                    "relay: host:port the apiserver's connections arrive on (the relay Service's target port)",
	"control":                   "relay: host:port the laptop attaches on, through the apiserver's pod port-forward",
	"wait":                      "uninstall: how long to wait for the install's pods to stop before cleaning up what they wrote",
	"identity":                  "serve: this replica's name in the leader election Lease (default: $POD_NAME, else host-pid)",
	"shutdown-delay":            "serve: how long a stopping replica keeps answering, not ready, while the Service's endpoints drop it",
	"image":                     "in-cluster: hookback image (default: ghcr.io/hookback/hookback:<this version>, :latest for a dev build)",
	"replicas":                  "in-cluster: replicas of the Deployment",
	"tunnel":                    "reach the apiserver's calls through a relay deployed for the session and the apiserver's pod port-forward, for a machine the cluster cannot route to (NAT, a cloud cluster); see docs/tunnel.md",
	"tunnel-namespace":          "tunnel: namespace of the session's relay (created when missing, and deleted again by the last session that leaves it)",
	"relay-image":               "tunnel: image that runs the relay (hookback relay); a dev build defaults to :latest",
	"late-answer-timeout":       "your webhooks: how long an answer is still awaited after the apiserver stopped waiting (a breakpoint); it is then logged, shown in the inspector and recorded as late (0 disables)",
	"shadow":                    "compare your webhooks with the ones deployed in the cluster: NAMESPACE/SERVICE[:PORT] (through the apiserver's service proxy) or an https URL (with a path: used as is; without: each webhook's path appended); hookback's copies then always allow, and differences are logged, counted and summed up at exit",
	"shadow-ca":                 "CA file to verify an https --shadow URL (default: the system roots)",
	"operation":                 "audit: send CREATE or UPDATE (a no-change update) to every webhook whose rules include it, instead of CREATE where the rules include it, else UPDATE",
	"output":                    "audit: table, json (one object per review) or junit (a testsuite per webhook, a failure per denial)",
	"fail-on":                   "audit: denied exits 1 when any object is denied; patched also when any is patched",
	"concurrency":               "audit: reviews in flight at once",
	"cert-manager":              "in-cluster: annotate the webhook configurations for cert-manager's cainjector (Certificate NAMESPACE/hookback)",
}

// serveFlagNames decide the URL and the configurations: start and render.
var serveFlagNames = []string{"advertise-address", "port", "session", "template", "state-dir", "lease-namespace",
	"tls-mode", "tls-cert-file", "tls-key-file", "ca-file", "acme-ca", "acme-email", "acme-ca-root", "acme-profile",
	"acme-http-port", "acme-renew-check-interval", "webhooks", "controllers", "banned-words", "sidecar-image", "cpu-oversell-factor",
	"webhook-config", "upstream", "upstream-ca", "upstream-insecure", "keep-failure-policy", "timeout"}

// startFlagNames are serveFlagNames plus what only a running session needs.
var startFlagNames = append(append([]string{}, serveFlagNames...),
	"bind-address", "health-address", "no-verify", "verify-timeout", "lease-duration", "record-dir",
	"inspector-address", "inspector-expose", "inspector-keep", "late-answer-timeout", "shadow", "shadow-ca", "tunnel", "tunnel-namespace", "relay-image")

// lookup finds the context in c's lineage where name was set (the
// subcommand's flags first, then the app's global ones), else c itself,
// whose value is the default.
func lookup(c *cli.Context, name string) *cli.Context {
	for _, cc := range c.Lineage() {
		if cc.Command != nil || cc.App != nil {
			if cc.IsSet(name) {
				return cc
			}
		}
	}
	return c
}

func str(c *cli.Context, name string) string { return lookup(c, name).String(name) }

// defaultStateDir is $XDG_STATE_HOME/hookback, else ~/.local/state/hookback.
func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "hookback")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "hookback")
	}
	return filepath.Join(os.TempDir(), "hookback-state")
}
