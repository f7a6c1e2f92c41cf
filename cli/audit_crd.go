package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/crdvalidate"
	"github.com/hookback/hookback/internal/report"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/manifests"
)

// runCRDAudit is audit --crd: every stored object of each CRD given,
// judged against it (crdvalidate.AuditStored).
func runCRDAudit(c *cli.Context, o AuditOptions) error {
	if err := errors.Join(o.Serve.GlobalOptions.Validate(), checkOutput(o.Output, crdvalidate.StoredReport{})); err != nil {
		return usage(err)
	}
	docs, err := manifests.Load(o.CRD, c.App.Reader)
	if err != nil {
		return cli.Exit(fmt.Sprintf("--crd: %v", err), exitUsage)
	}
	cfg, err := kubeconfig.Load(o.Serve.GlobalOptions.kubeconfig())
	if err != nil {
		return exit(err, exitUsage)
	}
	client, err := cfg.Dynamic(30 * time.Second)
	if err != nil {
		return exit(err, exitUsage)
	}
	var rep crdvalidate.StoredReport
	for _, d := range docs {
		if d.Object.GetKind() != manifests.KindCRD {
			continue
		}
		crd, err := crdvalidate.Compile(d.Object, d.Location())
		if err != nil {
			return exit(err, exitUsage)
		}
		r, err := crdvalidate.AuditStored(c.Context, client, crd)
		if err != nil {
			return exit(kubeconfig.Explain(err), exitUsage)
		}
		rep = append(rep, r...)
	}
	if err := report.Write(c.App.Writer, o.Output, rep); err != nil {
		return err
	}
	summary := fmt.Sprintf("%d stored objects: %d valid under the new CRDs, %d not", len(rep), len(rep)-rep.Failing(), rep.Failing())
	if rep.Failing() > 0 {
		return cli.Exit(summary, exitFailure)
	}
	fmt.Fprintln(c.App.ErrWriter, summary)
	return nil
}
