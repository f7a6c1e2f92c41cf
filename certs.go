package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/server"
)

// newCerts obtains the serving certificate for host as --tls-mode says.
func newCerts(c *cli.Context, host string, log *slog.Logger) (server.Certs, error) {
	switch c.String("tls-mode") {
	case "self-signed":
		return server.NewSelfSigned(c.Context, server.TLSOptions{StateDir: c.String("state-dir"), Host: host, Log: log})
	case "files":
		if c.String("tls-cert-file") == "" || c.String("tls-key-file") == "" {
			return nil, fmt.Errorf("--tls-mode files needs --tls-cert-file and --tls-key-file")
		}
		return server.NewFileCerts(context.WithoutCancel(c.Context), server.FileTLSOptions{
			CertFile: c.String("tls-cert-file"), KeyFile: c.String("tls-key-file"), CAFile: c.String("ca-file"),
			Host: host, Interval: 2 * time.Second, Log: log,
		})
	case "acme":
		return server.NewACMECerts(c.Context, server.ACMEOptions{
			CA: c.String("acme-ca"), Email: c.String("acme-email"), CARootFile: c.String("acme-ca-root"),
			Profile: c.String("acme-profile"), HTTPPort: c.Int("acme-http-port"),
			ListenHost: bindAddress(c.String("bind-address"), host), CAFile: c.String("ca-file"),
			StateDir: c.String("state-dir"), Host: host, RenewCheckInterval: c.Duration("acme-renew-check-interval"), Log: log,
		})
	default:
		return nil, fmt.Errorf("--tls-mode %q: want self-signed, acme or files", c.String("tls-mode"))
	}
}

// caBundle is what render puts into clientConfig.caBundle, without serving.
func caBundle(c *cli.Context) (string, error) {
	switch c.String("tls-mode") {
	case "files", "acme":
		if c.String("ca-file") == "" {
			return "", nil
		}
		b, err := os.ReadFile(c.String("ca-file"))
		if err != nil {
			return "", fmt.Errorf("read --ca-file: %w", err)
		}
		return base64.StdEncoding.EncodeToString(b), nil
	case "self-signed":
		ca, err := server.LoadOrCreateCA(c.String("state-dir"), "hookback local CA")
		if err != nil {
			return "", err
		}
		return ca.Bundle(), nil
	default:
		return "", fmt.Errorf("--tls-mode %q: want self-signed, acme or files", c.String("tls-mode"))
	}
}
