package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hookback/hookback/crdvalidate"
	"github.com/hookback/hookback/manifests"
	"github.com/hookback/hookback/suite"
)

// runTestInitObjects is test init --from-objects: a case per object whose
// kind a CRD of --crd (or of the project, or among the objects) defines,
// a create sent to that CRD's rules, expecting what they answer now.
func runTestInitObjects(c *cli.Context, o TestInitOptions) error {
	crdPaths := o.CRD
	if len(crdPaths) == 0 {
		if dir := crdvalidate.ProjectCRDs("."); dir != "" {
			crdPaths = []string{dir}
		}
	}
	docs, err := manifests.Load(o.FromObjects, c.App.Reader)
	if err != nil {
		return usage(fmt.Errorf("--from-objects: %w", err))
	}
	crds, err := compileCRDs(crdPaths, c.App.Reader)
	if err != nil {
		return exit(fmt.Errorf("--crd: %w", err), exitUsage)
	}
	var objects []manifests.Document
	for _, d := range docs {
		if d.Object.GetKind() != manifests.KindCRD {
			objects = append(objects, d)
			continue
		}
		crd, err := crdvalidate.Compile(d.Object, d.Location())
		if err != nil {
			return exit(err, exitUsage)
		}
		crds = append(crds, crd)
	}
	byKind := map[schema.GroupKind]*crdvalidate.CRD{}
	hooks := make([]*suite.Webhook, 0, len(crds))
	for _, crd := range crds {
		byKind[crd.GroupKind()] = crd
		hooks = append(hooks, crdWebhook(crd))
	}
	var cases []suite.ObjectCase
	var skipped []string
	for _, d := range objects {
		gk := d.Object.GroupVersionKind().GroupKind()
		crd, ok := byKind[gk]
		if !ok {
			skipped = append(skipped, fmt.Sprintf("%s: no CRD given for %s: give it with --crd", d.Location(), gk))
			continue
		}
		raw, err := d.Object.MarshalJSON()
		if err != nil {
			return exit(fmt.Errorf("%s: %w", d.Location(), err), exitUsage)
		}
		ns := d.Object.GetNamespace()
		if ns == "" && crd.NamespaceScoped() {
			ns = "default"
		}
		// The verdict's field errors, for an expectation that takes them
		// in any order (the suite's answer carries the message only).
		v, err := crd.Judge(c.Context, crdvalidate.Request{Object: d.Object, Namespace: ns})
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", d.Location(), err))
			continue
		}
		cases = append(cases, suite.ObjectCase{Source: d.Location(), Object: raw, Kind: d.Object.GetKind(), Name: d.Object.GetName(),
			Namespace: ns, Configuration: suite.CustomResourceDefinition, Webhook: crd.Name, Errors: v.Errors})
	}
	if len(cases) == 0 && len(skipped) == 0 {
		return usage(errors.New("--from-objects: no objects found"))
	}
	rep, err := suite.InitObjects(c.Context, cases, hooks, o.Out, c.App.Writer)
	if err != nil {
		return exit(err, exitUsage)
	}
	for _, s := range append(skipped, rep.Skipped...) {
		fmt.Fprintf(c.App.ErrWriter, "skipped %s\n", s)
	}
	fmt.Fprintf(c.App.ErrWriter, "%d cases written to %s (%d duplicate objects, %d objects skipped); run them: hookback test --crd %s %s\n",
		rep.Written, o.Out, rep.Duplicates, len(skipped)+len(rep.Skipped), strings.Join(crdPaths, " --crd "), o.Out)
	return nil
}
