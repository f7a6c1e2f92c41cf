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

func caCommand() (*cli.Command, *binder) {
	g, b := defaultGlobalOptions(), &binder{}
	stateDir, bundle := defaultStateDir(), false
	bind(b, &stateDir, "state-dir", catServing, "where the local CA and certificates live")
	bind(b, &bundle, "bundle", catOutput, "print the base64 caBundle instead of PEM")
	cmd := &cli.Command{
		Name:  "ca",
		Usage: "print hookback's local CA (the caBundle of self-signed mode), creating it if needed",
		Description: `ca prints the PEM of the local CA kept in --state-dir, which self-signed mode puts
into every clientConfig.caBundle; --bundle prints the base64 form instead. Use it to
trust hookback from curl or another client (its webhooks answer POSTed
AdmissionReviews at their paths, such as /validate-pod-name; health is plain HTTP on
--health-address), or to write your own template.` + examplesText(caExamples),
		Flags: withGlobal(&g, b),
		Action: func(c *cli.Context) error {
			b.load(c)
			ca, err := certs.LoadOrCreateCA(stateDir, "hookback local CA")
			if err != nil {
				return err
			}
			if bundle {
				_, err = fmt.Fprintln(c.App.Writer, ca.Bundle())
				return err
			}
			fmt.Fprintf(c.App.ErrWriter, "# %s, SHA-256 %s\n", filepath.Join(stateDir, "ca.crt"), ca.Fingerprint())
			_, err = c.App.Writer.Write(ca.CertPEM)
			return err
		},
	}
	return cmd, b
}
