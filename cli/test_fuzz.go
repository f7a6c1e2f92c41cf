package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/hookback/hookback/conversion/roundtrip"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/session"
	"github.com/hookback/hookback/suite"
)

// fuzzOptions are test's conversion fuzzer flags.
type fuzzOptions struct {
	N           int
	CRD         string
	Seed        int
	FromCluster int
	Strict      bool
}

func (o *fuzzOptions) bind(b *binder) {
	bind(b, &o.N, "conversion-fuzz", catUser, "make this many objects per served version of each CRD from its schema (and the suite's objects, the project's config/samples), round-trip each through the conversion webhook to every other served version and back, and report each field lost, writing a case per loss into the suite directory; 0: off")
	bind(b, &o.CRD, "crd", catUser, "CRD file (or directory): the cases can target its schema and CEL rules, a validating webhook named as the CRD judged with the apiserver's code (docs/crd-validation.md); with --conversion-fuzz, the CRDs to fuzz (default: the CRDs of --webhook-config or the project whose conversion is a webhook)", sets("roundtrip.Options.CRD"))
	bind(b, &o.Seed, "seed", catUser, "with --conversion-fuzz: the seed that reproduces a run (0: a new one, printed)")
	bind(b, &o.Strict, "conversion-fuzz-strict", catUser, "with --conversion-fuzz: compare every byte of the answers, not the objects as the apiserver stores them (nulls dropped, pruned by the schema); an absent field that comes back as an empty structure is then a loss, one per level", sets("roundtrip.Options.Strict"))
	bind(b, &o.FromCluster, "from-cluster", catUser, "with --conversion-fuzz: also start from up to this many objects of each CRD in the cluster of --kubeconfig, listed in the CRD's storage version; 0: no cluster")
}

// Validate reports every problem at once.
func (o fuzzOptions) Validate() error {
	var errs []error
	if o.N < 0 {
		errs = append(errs, fmt.Errorf("--conversion-fuzz %d: want 0 (off) or more", o.N))
	}
	if o.N == 0 && (o.Seed != 0 || o.FromCluster != 0 || o.Strict) {
		errs = append(errs, errors.New("--seed, --from-cluster and --conversion-fuzz-strict are for --conversion-fuzz N: give it"))
	}
	if o.FromCluster < 0 {
		errs = append(errs, fmt.Errorf("--from-cluster %d: want 0 (no cluster) or the most objects to list per CRD", o.FromCluster))
	}
	return errors.Join(errs...)
}

// fuzzTarget is one CRD to fuzz with its conversion webhook.
type fuzzTarget struct {
	crd  *apiextensionsv1.CustomResourceDefinition
	conv suiteConversion
}

type suiteConversion = suite.ConversionWebhook

// runFuzz fuzzes every target CRD, writes a case per loss into caseDir
// (when set) and returns the rows to report.
func runFuzz(ctx context.Context, o fuzzOptions, g GlobalOptions, setup *session.TestSetup, files []*suite.File, samples, caseDir string, stderr io.Writer, log *slog.Logger) ([]suite.Row, error) {
	targets, err := fuzzTargets(o, setup)
	if err != nil {
		return nil, err
	}
	fromCluster, err := clusterSeeds(ctx, o, g, targets, stderr)
	if err != nil {
		return nil, err
	}
	seed := uint64(o.Seed)
	if seed == 0 {
		seed = rand.Uint64() >> 1
	}
	fmt.Fprintf(stderr, "conversion fuzz: --seed %d reproduces this run\n", seed)
	seeds := suite.FuzzSeeds(files)
	if samples != "" {
		if objs, err := roundtrip.ReadObjects(samples); err == nil {
			seeds = append(seeds, objs...)
		} else if !os.IsNotExist(errors.Unwrap(err)) {
			log.Info("the project's samples were not read", "dir", samples, "error", err)
		}
	}
	hooks := testWebhooks(setup)
	var rows []suite.Row
	for _, t := range targets {
		rep, err := roundtrip.Run(ctx, roundtrip.Options{CRD: t.crd, Converter: t.conv.Converter, N: o.N, Seed: seed, Seeds: append(slices.Clone(seeds), fromCluster[t.crd.Name]...),
			Strict: o.Strict, Admit: suite.FuzzAdmitter(hooks, t.crd.Spec.Names.Plural, []suite.ConversionWebhook{t.conv}), Log: log})
		if err != nil {
			return nil, fmt.Errorf("conversion fuzz of %s: %w", t.crd.Name, err)
		}
		var written map[string]string
		if caseDir != "" {
			if written, err = suite.WriteLossCases(caseDir, rep, t.crd.Spec.Group); err != nil {
				return nil, err
			}
			for _, f := range written {
				fmt.Fprintf(stderr, "conversion fuzz: wrote %s\n", f)
			}
		} else if !rep.Clean() {
			fmt.Fprintln(stderr, "conversion fuzz: no suite directory given: the cases that reproduce the losses are not written")
		}
		rows = append(rows, suite.FuzzRows(rep, written)...)
	}
	return rows, nil
}

// clusterSeeds lists, with --from-cluster, the objects of each target CRD
// in the cluster, by CRD name.
func clusterSeeds(ctx context.Context, o fuzzOptions, g GlobalOptions, targets []fuzzTarget, stderr io.Writer) (map[string][]map[string]any, error) {
	if o.FromCluster == 0 {
		return nil, nil
	}
	cfg, err := kubeconfig.Load(g.kubeconfig())
	if err != nil {
		return nil, fmt.Errorf("--from-cluster: %w", err)
	}
	client, err := cfg.Dynamic(30 * time.Second)
	if err != nil {
		return nil, fmt.Errorf("--from-cluster: %w", err)
	}
	out := map[string][]map[string]any{}
	for _, t := range targets {
		objs, err := roundtrip.ClusterSeeds(ctx, client, t.crd, int64(o.FromCluster))
		if err != nil {
			return nil, fmt.Errorf("--from-cluster: %w", err)
		}
		fmt.Fprintf(stderr, "conversion fuzz: %d objects of %s in the cluster to start from\n", len(objs), t.crd.Name)
		out[t.crd.Name] = objs
	}
	return out, nil
}

// fuzzTargets pairs the CRDs to fuzz with their conversion webhooks.
func fuzzTargets(o fuzzOptions, setup *session.TestSetup) ([]fuzzTarget, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	if o.CRD != "" {
		var err error
		if crds, err = roundtrip.ReadCRDs(o.CRD); err != nil {
			return nil, err
		}
	} else {
		for _, u := range setup.CRDs {
			crd, err := roundtrip.FromUnstructured(u.Object)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", u.GetName(), err)
			}
			crds = append(crds, crd)
		}
	}
	if len(crds) == 0 {
		return nil, errors.New("--conversion-fuzz: no CRD with a conversion webhook in the manifests: give --webhook-config with the CRD and its conversion patch (or run in the project), or --crd FILE")
	}
	var out []fuzzTarget
	for _, crd := range crds {
		var conv *suiteConversion
		for _, h := range setup.Conversions {
			if h.CRD == crd.Name {
				conv = &suiteConversion{CRD: h.CRD, Converter: h.Converter}
			}
		}
		if conv == nil {
			return nil, fmt.Errorf("--conversion-fuzz: CRD %s has no conversion webhook among the manifests: give --webhook-config with its conversion patch (spec.conversion.strategy Webhook)", crd.Name)
		}
		out = append(out, fuzzTarget{crd: crd, conv: *conv})
	}
	return out, nil
}

// fuzzCaseDir is where the fuzzer writes its cases: the suite directory
// (the first path, or its directory for a file).
func fuzzCaseDir(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	if info, err := os.Stat(paths[0]); err == nil && !info.IsDir() {
		return filepath.Dir(paths[0])
	}
	return paths[0]
}

// loadSuite loads the suite; with the fuzzer, a suite directory that does
// not exist yet is where its cases will go, not an error.
func loadSuite(paths []string, fuzzing bool) ([]*suite.File, error) {
	if fuzzing {
		var existing []string
		for _, p := range paths {
			if _, err := os.Stat(p); err == nil {
				existing = append(existing, p)
			}
		}
		paths = existing
	}
	if len(paths) == 0 {
		return nil, nil
	}
	return suite.Load(paths)
}
