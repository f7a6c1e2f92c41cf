package main

import (
	_ "embed"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

//go:embed webhook-url.yaml.tmpl
var defaultTemplate []byte

// serveFlags are shared by start and render: they decide the URL.
func serveFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "advertise-address", EnvVars: env("advertise-address"), Usage: "IP or DNS name the apiserver dials to reach hookback (default: decided from the kubeconfig's server, see docs/reachability.md)"},
		&cli.IntFlag{Name: "port", EnvVars: env("port"), Value: 8443, Usage: "HTTPS port for the webhooks"},
		&cli.StringFlag{Name: "session", EnvVars: env("session"), Usage: "session name: suffixes every object hookback writes (default: <user>-<host>)"},
		&cli.StringFlag{Name: "template", EnvVars: env("template"), Usage: "webhook configuration template (default: the built-in webhook-url.yaml.tmpl); hot-reloaded while running"},
		&cli.StringFlag{Name: "state-dir", EnvVars: env("state-dir"), Value: defaultStateDir(), Usage: "where the local CA and certificates live"},
		&cli.StringFlag{Name: "lease-namespace", EnvVars: env("lease-namespace"), Value: "default", Usage: "namespace for the session Lease and the canary ConfigMap"},
		&cli.StringFlag{Name: "tls-mode", EnvVars: env("tls-mode"), Value: "self-signed", Usage: "self-signed (a local CA in --state-dir), acme (a certificate from an ACME CA, --acme-*) or files (--tls-cert-file, --tls-key-file, --ca-file)"},
		&cli.StringFlag{Name: "tls-cert-file", EnvVars: env("tls-cert-file"), Usage: "files mode: serving certificate (PEM, may include the chain); reloaded on change"},
		&cli.StringFlag{Name: "tls-key-file", EnvVars: env("tls-key-file"), Usage: "files mode: its private key; reloaded on change"},
		&cli.StringFlag{Name: "ca-file", EnvVars: env("ca-file"), Usage: "files and acme modes: CA the apiserver should trust (the caBundle); empty when the certificate is publicly trusted"},
		&cli.StringFlag{Name: "acme-ca", EnvVars: env("acme-ca"), Value: "https://acme-v02.api.letsencrypt.org/directory", Usage: "acme mode: ACME directory URL; using it agrees to the CA's terms of service"},
		&cli.StringFlag{Name: "acme-email", EnvVars: env("acme-email"), Usage: "acme mode: contact email for the ACME account (optional)"},
		&cli.StringFlag{Name: "acme-ca-root", EnvVars: env("acme-ca-root"), Usage: "acme mode: PEM root to trust for the ACME server's own HTTPS (a private ACME server such as pebble)"},
		&cli.StringFlag{Name: "acme-profile", EnvVars: env("acme-profile"), Value: "shortlived", Usage: "acme mode: ACME profile to order under (Let's Encrypt issues IP certificates only under shortlived); empty: the CA's default"},
		&cli.IntFlag{Name: "acme-http-port", EnvVars: env("acme-http-port"), Value: 80, Usage: "acme mode: port the HTTP-01 challenge is answered on, opened only while a challenge is pending (the CA always dials port 80: forward it here when different)"},
		&cli.DurationFlag{Name: "acme-renew-check-interval", EnvVars: env("acme-renew-check-interval"), Value: 10 * time.Minute, Hidden: true, Usage: "acme mode: how often certmagic checks whether to renew"},
	}
}

func startFlags() []cli.Flag {
	return append(serveFlags(),
		&cli.StringFlag{Name: "bind-address", EnvVars: env("bind-address"), Usage: "address to listen on (default: the advertise address when it is this machine's, else all interfaces)"},
		&cli.StringFlag{Name: "health-address", EnvVars: env("health-address"), Value: "127.0.0.1:8081", Usage: "host:port for /healthz, /readyz and /metrics"},
		&cli.BoolFlag{Name: "no-verify", EnvVars: env("no-verify"), Usage: "keep running (and log the diagnosis) when verification shows the apiserver cannot reach hookback"},
		&cli.DurationFlag{Name: "verify-timeout", EnvVars: env("verify-timeout"), Value: 15 * time.Second, Usage: "how long verification may take"},
		&cli.DurationFlag{Name: "lease-duration", EnvVars: env("lease-duration"), Value: 30 * time.Second, Usage: "how long the session survives without a heartbeat before another run may clean it up"},
	)
}

func startCommand() *cli.Command {
	return &cli.Command{
		Name:  "start",
		Usage: "serve the webhooks, register them with the cluster, run the controllers; deregister on exit",
		Description: `start authenticates with the kubeconfig, serves HTTPS on an address the apiserver can
reach, writes Mutating/ValidatingWebhookConfigurations whose clientConfig.url points here,
proves with a dry-run canary that the apiserver really calls back, runs the controllers,
and deletes what it wrote on Ctrl-C or SIGTERM.

Examples:
   hookback start
   hookback start --context kind-dev --webhooks pod-name,pod-sidecar --controllers none
   hookback start --advertise-address 192.168.1.20 --template ./my-webhooks.yaml.tmpl`,
		Flags:  append(startFlags(), featureFlags()...),
		Action: runStart,
	}
}

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

// sessionName returns --session, checked, or the default.
func sessionName(c *cli.Context) (string, error) {
	s := c.String("session")
	if s == "" {
		return defaultSession(), nil
	}
	if sanitizeSession(s) != s {
		return "", fmt.Errorf("--session %q: use lowercase letters, digits and '-', at most 40 characters", s)
	}
	return s, nil
}

// loggerAndSession is the first step of every command that writes under a
// session name.
func loggerAndSession(c *cli.Context) (*slog.Logger, string, error) {
	log, err := newLogger(c)
	if err != nil {
		return nil, "", err
	}
	session, err := sessionName(c)
	return log, session, err
}

// webhookURL is https://host:port with IPv6 hosts bracketed.
func webhookURL(host string, port int) string {
	return "https://" + net.JoinHostPort(host, strconv.Itoa(port))
}
