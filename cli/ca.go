package cli

import (
	"fmt"
	"path/filepath"

	"github.com/hookback/hookback/certs"
	"github.com/urfave/cli/v2"
)

var caExamples = []Example{
	{Command: "hookback ca > hookback-ca.pem", Comment: "trust hookback's webhooks from curl or another client: --cacert hookback-ca.pem"},
	{Command: "hookback ca --bundle", Comment: "the caBundle to paste into your own configuration"},
}

func caCommand() *cli.Command {
	return &cli.Command{
		Name:  "ca",
		Usage: "print hookback's local CA (the caBundle of self-signed mode), creating it if needed",
		Description: `ca prints the PEM of the local CA kept in --state-dir, which self-signed mode puts
into every clientConfig.caBundle; --bundle prints the base64 form instead. Use it to
trust hookback from curl or another client (its webhooks answer POSTed
AdmissionReviews at their paths, such as /validate-pod-name; health is plain HTTP on
--health-address), or to write your own template.` + examplesText(caExamples),
		Flags: withGlobal("state-dir", "bundle"),
		Action: func(c *cli.Context) error {
			ca, err := certs.LoadOrCreateCA(c.String("state-dir"), "hookback local CA")
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
