package main

import (
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/server"
)

func caCommand() *cli.Command {
	return &cli.Command{
		Name:  "ca",
		Usage: "print hookback's local CA (the caBundle of self-signed mode), creating it if needed",
		Description: `ca prints the PEM of the local CA kept in --state-dir, which self-signed mode puts
into every clientConfig.caBundle; --bundle prints the base64 form instead. Use it to
trust hookback from curl or another client, or to write your own template.

Examples:
   hookback ca > hookback-ca.pem && curl --cacert hookback-ca.pem https://127.0.0.1:8443/healthz
   hookback ca --bundle`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "state-dir", EnvVars: env("state-dir"), Value: defaultStateDir(), Usage: "where the local CA lives"},
			&cli.BoolFlag{Name: "bundle", Usage: "print the base64 caBundle instead of PEM"},
		},
		Action: func(c *cli.Context) error {
			ca, err := server.LoadOrCreateCA(c.String("state-dir"), "hookback local CA")
			if err != nil {
				return err
			}
			if c.Bool("bundle") {
				_, err = fmt.Fprintln(c.App.Writer, ca.Bundle())
				return err
			}
			fmt.Fprintf(c.App.ErrWriter, "# %s, SHA-256 %s\n", filepath.Join(c.String("state-dir"), "ca.crt"), ca.Fingerprint())
			_, err = c.App.Writer.Write(ca.CertPEM)
			return err
		},
	}
}
