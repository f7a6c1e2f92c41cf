package cli

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hookback/hookback/crdvalidate"
	"github.com/hookback/hookback/manifests"
	"github.com/hookback/hookback/suite"
)

// suiteWebhooks are the webhooks test reads afresh on each run of
// --watch: --policy's policies and the CRDs (testCRDs). The policies get
// the CRDs' schemas, as the apiserver's admission policies have them for
// a custom resource's ApplyConfiguration.
func suiteWebhooks(ctx context.Context, o TestOptions, files []*suite.File, stdin io.Reader, cache *crdCache) ([]*suite.Webhook, error) {
	crds, err := testCRDs(ctx, o, files, stdin, cache)
	if err != nil {
		return nil, explainCluster(err)
	}
	var out []*suite.Webhook
	if len(o.Policy) > 0 {
		schemas, err := crdvalidate.OpenAPI(crds)
		if err != nil {
			return nil, err
		}
		hooks, err := testPolicyWebhooks(ctx, o.Policy, stdin, schemas)
		if err != nil {
			return nil, err
		}
		out = append(out, hooks...)
	}
	for _, c := range crds {
		out = append(out, crdWebhook(c))
	}
	return out, nil
}

// testCRDs are the CRDs of --crd and, with --crd-from-cluster, the
// cluster's CRDs of the kinds the suite's objects have that --crd does
// not give.
func testCRDs(ctx context.Context, o TestOptions, files []*suite.File, stdin io.Reader, cache *crdCache) ([]*crdvalidate.CRD, error) {
	var crds []*crdvalidate.CRD
	if o.Fuzz.CRD != "" {
		given, err := cache.compileAll([]string{o.Fuzz.CRD}, stdin)
		if err != nil {
			return nil, fmt.Errorf("--crd: %w", err)
		}
		crds = given
	}
	if o.CRDFromCluster {
		client, err := clusterClient(o.Serve.GlobalOptions)
		if err != nil {
			return nil, err
		}
		fromCluster, err := crdvalidate.ClusterCRDsOf(ctx, client, suiteKinds(files, crds))
		if err != nil {
			return nil, fmt.Errorf("--crd-from-cluster: %w", err)
		}
		crds = append(crds, fromCluster...)
	}
	return crds, nil
}

// crdCache keeps compiled CRDs by their manifest's content, so that a
// rerun of test --watch compiles again only a CRD that changed (a
// compile is most of a rerun's time); nil compiles every time. A run
// keeps only the CRDs it used (rotate).
type crdCache struct {
	prev, used map[[sha256.Size]byte]*crdvalidate.CRD
}

func newCRDCache() *crdCache { return &crdCache{used: map[[sha256.Size]byte]*crdvalidate.CRD{}} }

// rotate forgets the CRDs the last run did not use.
func (cc *crdCache) rotate() {
	cc.prev, cc.used = cc.used, map[[sha256.Size]byte]*crdvalidate.CRD{}
}

func (cc *crdCache) compile(u *unstructured.Unstructured, source string) (*crdvalidate.CRD, error) {
	if cc == nil {
		return crdvalidate.Compile(u, source)
	}
	b, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	key := sha256.Sum256(append([]byte(source+"\x00"), b...))
	c, ok := cc.used[key]
	if !ok {
		c, ok = cc.prev[key]
	}
	if !ok {
		if c, err = crdvalidate.Compile(u, source); err != nil {
			return nil, err
		}
	}
	cc.used[key] = c
	return c, nil
}

func compileCRDs(paths []string, stdin io.Reader) ([]*crdvalidate.CRD, error) {
	return (*crdCache)(nil).compileAll(paths, stdin)
}

func (cc *crdCache) compileAll(paths []string, stdin io.Reader) ([]*crdvalidate.CRD, error) {
	docs, err := manifests.Load(paths, stdin)
	if err != nil {
		return nil, err
	}
	var out []*crdvalidate.CRD
	for _, d := range docs {
		if d.Object.GetKind() != manifests.KindCRD {
			continue
		}
		c, err := cc.compile(d.Object, d.Location())
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// suiteKinds are the kinds of the suite's objects that no CRD of given
// defines; nil (every CRD of the cluster) when the suite has no objects
// of its own (recorded reviews only).
func suiteKinds(files []*suite.File, given []*crdvalidate.CRD) []schema.GroupKind {
	seeds := suite.FuzzSeeds(files)
	if len(seeds) == 0 {
		return nil
	}
	kinds := []schema.GroupKind{}
	for _, obj := range seeds {
		apiVersion, _ := obj["apiVersion"].(string)
		kind, _ := obj["kind"].(string)
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil || kind == "" {
			continue
		}
		gk := gv.WithKind(kind).GroupKind()
		if !slices.Contains(kinds, gk) && !slices.ContainsFunc(given, func(c *crdvalidate.CRD) bool { return c.GroupKind() == gk }) {
			kinds = append(kinds, gk)
		}
	}
	return kinds
}

// crdWebhook is a CRD as a webhook of the suite: a case names it by the
// CRD's name (configuration CustomResourceDefinition) and is matched by
// its creates and updates, status included; each is judged with the
// apiserver's code (crdvalidate) and answers as the apiserver would:
// denied with its message, allowed with its warnings. The suite runs it
// where the apiserver validates a custom resource: after mutating
// admission, before validating admission (suite.Webhook.Schema).
func crdWebhook(c *crdvalidate.CRD) *suite.Webhook {
	none := admissionregistrationv1.SideEffectClassNone
	return &suite.Webhook{Configuration: suite.CustomResourceDefinition, Schema: c, Path: "/crd/" + c.Name,
		Validating: &admissionregistrationv1.ValidatingWebhook{Name: c.Name, Rules: c.Rules(), SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}}
}
