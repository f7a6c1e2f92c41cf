package registration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// CRD annotations. AnnotationConversion holds the exact JSON of the
// spec.conversion a redirected CRD had before hookback pointed it at itself
// (for a CRD hookback installed, the manifests' one): restore puts it back.
// AnnotationInstalled names the session that installed a CRD that was
// missing from the cluster; the CRD stays after the session.
const (
	AnnotationConversion = "hookback.dev/conversion"
	AnnotationInstalled  = "hookback.dev/installed"
	// ConvertPathPrefix + CRD name is the path hookback serves a CRD's
	// ConversionReviews on.
	ConvertPathPrefix = "/convert/"
)

// CRDResource is apiextensions.k8s.io/v1 customresourcedefinitions.
var CRDResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// CRD is one CustomResourceDefinition of the user's manifests.
type CRD struct {
	// Object is the CRD as the intake gives it (CA injectors removed);
	// Source is where it was read ("FILE document N"), for messages.
	Object *unstructured.Unstructured
	Source string
	Name   string
	// Conversion is the route of a CRD whose spec.conversion.strategy is
	// Webhook (Path is ConversionPath(Name), UpstreamPath the manifest's
	// path); nil for any other CRD.
	Conversion *Route
}

// ConversionPath is where hookback serves the ConversionReviews of crd:
// ConvertPathPrefix, the CRD's name, then the path of its upstream target
// (escaped, starting with /), so that a recording names where to replay it.
func ConversionPath(crd, upstreamPath string) string {
	return ConvertPathPrefix + url.PathEscape(crd) + upstreamPath
}

// ConversionOf reads a ConversionPath back: the CRD and the upstream path.
func ConversionOf(path string) (crd, upstreamPath string, ok bool) {
	rest, ok := strings.CutPrefix(path, ConvertPathPrefix)
	if !ok {
		return "", "", false
	}
	name, up, found := strings.Cut(rest, "/")
	if !found || name == "" {
		return "", "", false
	}
	crd, err := url.PathUnescape(name)
	return crd, "/" + up, err == nil
}

// CRDs installs the user's missing CRDs, points conversion webhooks at
// hookback and puts them back.
type CRDs struct {
	Dynamic dynamic.Interface
	// Session labels what is written; LeaseRef is annotated, so that a later
	// run can tell a dead session's CRDs (AnnotationLease).
	Session, LeaseRef string
	Log               *slog.Logger
	// told are the CRDs already said to differ from the manifests: said
	// once per CRDs value, not on every re-apply. Ensure is not safe for
	// concurrent use.
	told map[string]bool
}

// Target is where a redirected conversion points: hookback's base URL, or
// with `start --tunnel` the Service of the session's relay, and the
// caBundle (base64 PEM, "" for none).
type Target struct {
	URL, CABundle string
	// Service, when set, replaces URL: the conversion goes to this
	// Service's port, with the conversion's own path.
	Service *ServiceRef
}

// Ensure installs each CRD missing from the cluster and redirects the
// conversion webhook of each CRD that redirect selects. An existing CRD is
// never replaced: when its versions or schemas differ from the manifests',
// one line says so. It returns the CRDs installed and those redirected.
func (c *CRDs) Ensure(ctx context.Context, crds []CRD, redirect func(name string) bool, to Target) (installed, redirected []string, err error) {
	var errs []error
	for _, crd := range crds {
		convert := crd.Conversion != nil && redirect(crd.Name)
		live, err := c.Dynamic.Resource(CRDResource).Get(ctx, crd.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			if err := c.install(ctx, crd, convert, to); err != nil {
				errs = append(errs, err)
				continue
			}
			installed = append(installed, crd.Name)
		case err != nil:
			errs = append(errs, fmt.Errorf("get CustomResourceDefinition %q: %w", crd.Name, err))
			continue
		default:
			if diff := crdDiffers(crd.Object, live); diff != "" && !c.told[crd.Name] {
				if c.told == nil {
					c.told = map[string]bool{}
				}
				c.told[crd.Name] = true
				c.Log.Warn("the cluster's CustomResourceDefinition differs from the manifests': run `make install` (or kubectl apply) to update it",
					"crd", crd.Name, "differs", diff)
			}
			if convert {
				if err := c.redirect(ctx, live, crd, to); err != nil {
					errs = append(errs, err)
					continue
				}
			}
		}
		if convert {
			redirected = append(redirected, crd.Name)
		}
	}
	return installed, redirected, errors.Join(errs...)
}

// install server-side applies a CRD missing from the cluster, its
// conversion already pointed at hookback when convert, and waits until it
// is established.
func (c *CRDs) install(ctx context.Context, crd CRD, convert bool, to Target) error {
	o := crd.Object.DeepCopy()
	o.SetAPIVersion("apiextensions.k8s.io/v1")
	o.SetResourceVersion("")
	o.SetUID("")
	labels := o.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelManagedBy], labels[LabelSession] = ManagedByValue, c.Session
	o.SetLabels(labels)
	anns := o.GetAnnotations()
	if anns == nil {
		anns = map[string]string{}
	}
	anns[AnnotationInstalled] = c.Session
	if convert {
		prev, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "conversion")
		saved, err := json.Marshal(prev)
		if err != nil {
			return fmt.Errorf("CustomResourceDefinition %q: encode its conversion: %w", crd.Name, err)
		}
		anns[AnnotationConversion], anns[AnnotationLease] = string(saved), c.LeaseRef
		if err := unstructured.SetNestedField(o.Object, redirectedConversion(prev, crd.Conversion.Path, to), "spec", "conversion"); err != nil {
			return fmt.Errorf("CustomResourceDefinition %q: %w", crd.Name, err)
		}
	}
	o.SetAnnotations(anns)
	if _, err := c.Dynamic.Resource(CRDResource).Apply(ctx, crd.Name, o, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return fmt.Errorf("install CustomResourceDefinition %q: %w", crd.Name, err)
	}
	c.Log.Info("installed CustomResourceDefinition missing from the cluster; it stays after hookback stops", "crd", crd.Name, "source", crd.Source)
	return c.waitEstablished(ctx, crd.Name)
}

func (c *CRDs) waitEstablished(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		o, err := c.Dynamic.Resource(CRDResource).Get(ctx, name, metav1.GetOptions{})
		if err == nil && established(o) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CustomResourceDefinition %q not established within 30s: see its status.conditions", name)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func established(o *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// redirectedConversion is the conversion stanza pointing at hookback,
// keeping the review versions the CRD accepts.
func redirectedConversion(prev any, path string, to Target) map[string]any {
	versions := []any{"v1"}
	if pm, ok := prev.(map[string]any); ok {
		if vs, found, _ := unstructured.NestedSlice(pm, "webhook", "conversionReviewVersions"); found && len(vs) > 0 {
			versions = vs
		}
	}
	cc := map[string]any{"url": strings.TrimRight(to.URL, "/") + path}
	if svc := to.Service; svc != nil {
		cc = map[string]any{"service": map[string]any{"namespace": svc.Namespace, "name": svc.Name, "path": path, "port": int64(svc.Port)}}
	}
	if to.CABundle != "" {
		cc["caBundle"] = to.CABundle
	}
	return map[string]any{"strategy": "Webhook", "webhook": map[string]any{"clientConfig": cc, "conversionReviewVersions": versions}}
}

// crdDiffers names what differs between the manifests' CRD and the live
// one in versions (name, served, storage) and schemas; "" when nothing.
// spec.conversion and what the apiserver defaults are not compared.
func crdDiffers(want, live *unstructured.Unstructured) string {
	wv, lv := crdVersions(want), crdVersions(live)
	var names []string
	for n := range wv {
		names = append(names, n)
	}
	for n := range lv {
		if _, ok := wv[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var diffs []string
	for _, n := range names {
		w, inWant := wv[n]
		l, inLive := lv[n]
		switch {
		case !inLive:
			diffs = append(diffs, "version "+n+" missing from the cluster")
		case !inWant:
			diffs = append(diffs, "version "+n+" not in the manifests")
		case w.served != l.served || w.storage != l.storage:
			diffs = append(diffs, "version "+n+" served/storage")
		case !reflect.DeepEqual(w.schema, l.schema):
			diffs = append(diffs, "schema of version "+n)
		}
	}
	return strings.Join(diffs, "; ")
}

type crdVersion struct {
	served, storage bool
	schema          any
}

func crdVersions(o *unstructured.Unstructured) map[string]crdVersion {
	out := map[string]crdVersion{}
	vs, _, _ := unstructured.NestedSlice(o.Object, "spec", "versions")
	for _, v := range vs {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		served, _ := m["served"].(bool)
		storage, _ := m["storage"].(bool)
		schema, _, _ := unstructured.NestedFieldNoCopy(m, "schema", "openAPIV3Schema")
		out[name] = crdVersion{served: served, storage: storage, schema: schema}
	}
	return out
}
