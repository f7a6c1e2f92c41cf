package crdvalidate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/manifests"
	"github.com/hookback/hookback/project"
)

// Options say what to judge and how.
type Options struct {
	// CRDs are manifests holding CustomResourceDefinitions (files,
	// directories, kustomize directories, - for stdin). CRDs found among
	// Objects are used too. With none at all, a kubebuilder project's
	// config/crd is read (see ProjectCRDs).
	CRDs []string
	// Objects are the manifests of the objects to judge.
	Objects []string
	// Old is a manifest of stored objects: each object is judged as an
	// update of the one of the same kind, namespace and name in it.
	Old []string
	// Subresource is "" or "status": the objects are status updates of
	// their Old objects.
	Subresource string
	// Namespace is the namespace of namespaced objects that name none.
	Namespace string
	// FieldValidation is Warn (unknown fields are warnings, the
	// apiserver's default) or Strict (kubectl's: they are errors).
	FieldValidation string
	// Schemas are the OpenAPI schemas of native kinds (Deployment,
	// ConfigMap...): Bundled{} when nil (native.go).
	Schemas NativeSchemas
	// FromCluster, when set, is the cluster whose CRDs define the kinds
	// that no CRD of CRDs or Objects defines (ClusterCRDs).
	FromCluster dynamic.Interface
}

// Validate reports every wrong option at once.
func (o Options) Validate() error {
	var errs []error
	if len(o.Objects) == 0 {
		errs = append(errs, errors.New("no objects to judge: name their files or directories, or - for stdin"))
	}
	if o.Subresource != "" && o.Subresource != "status" {
		errs = append(errs, &field.Error{Field: "crdvalidate.Options.Subresource", Value: fmt.Sprintf("%q", o.Subresource),
			Detail: "want status (or nothing for the main resource)"})
	}
	if o.Subresource != "" && len(o.Old) == 0 {
		errs = append(errs, &field.Error{Field: "crdvalidate.Options.Old", Advice: true,
			Detail: "a status update replaces a stored object: name it with {crdvalidate.Options.Old}"})
	}
	if o.FieldValidation != "" && o.FieldValidation != FieldValidationWarn && o.FieldValidation != FieldValidationStrict {
		errs = append(errs, &field.Error{Field: "crdvalidate.Options.FieldValidation", Value: fmt.Sprintf("%q", o.FieldValidation),
			Detail: "want Warn (the apiserver's default) or Strict (kubectl's)"})
	}
	return errors.Join(errs...)
}

// ProjectCRDs is where a kubebuilder project under dir keeps its CRDs
// (config/crd, a kustomize directory), or "" when dir holds no project or
// the project no CRDs.
func ProjectCRDs(dir string) string {
	if !project.Has(dir) {
		return ""
	}
	p := filepath.Join(dir, "config", "crd")
	if st, err := os.Stat(p); err != nil || !st.IsDir() {
		return ""
	}
	return p
}

// Run reads the CRDs and objects and judges every object. Its error is
// for input that cannot be judged at all (an unreadable file, a CRD the
// apiserver would refuse: *InvalidCRDError); an object that cannot be
// judged (a kind without a CRD) is a Result with Problem set.
func Run(ctx context.Context, o Options, stdin io.Reader) (Report, error) {
	return run(ctx, o, stdin, nil)
}

// run is Run with the CRDs compiled through cache (nil: every time).
func run(ctx context.Context, o Options, stdin io.Reader, cache *compileCache) (Report, error) {
	defer cache.done()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	objDocs, err := manifests.Load(o.Objects, stdin)
	if err != nil {
		return nil, fmt.Errorf("read objects: %w", err)
	}
	crdDocs, err := manifests.Load(o.CRDs, stdin)
	if err != nil {
		return nil, fmt.Errorf("read CRDs: %w", err)
	}
	set := Set{}
	var judged []manifests.Document
	for _, d := range objDocs {
		if isCRD(d.Object) {
			crdDocs = append(crdDocs, d)
			continue
		}
		judged = append(judged, d)
	}
	for _, d := range crdDocs {
		if !isCRD(d.Object) {
			continue
		}
		c, err := cache.compile(d)
		if err != nil {
			return nil, err
		}
		set.Add(c)
	}
	if o.FromCluster != nil {
		if err := set.addFromCluster(ctx, o.FromCluster, objectsOf(judged)); err != nil {
			return nil, err
		}
	}
	if err := set.addNative(o.schemas(), objectsOf(judged)); err != nil {
		return nil, err
	}
	olds, err := loadOld(o.Old, stdin)
	if err != nil {
		return nil, err
	}
	return set.judgeAll(ctx, judged, olds, o), nil
}

// Set is CRDs by the kind of their objects.
type Set map[schema.GroupKind]*CRD

// Add adds c, replacing a CRD of the same kind.
func (s Set) Add(c *CRD) { s[c.GroupKind()] = c }

func isCRD(u *unstructured.Unstructured) bool {
	return u.GetKind() == manifests.KindCRD && u.GroupVersionKind().Group == "apiextensions.k8s.io"
}

// objectKey identifies a stored object.
type objectKey struct {
	gk              schema.GroupKind
	namespace, name string
}

func keyOf(u *unstructured.Unstructured) objectKey {
	return objectKey{gk: u.GroupVersionKind().GroupKind(), namespace: u.GetNamespace(), name: u.GetName()}
}

func loadOld(paths []string, stdin io.Reader) (map[objectKey]*unstructured.Unstructured, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	docs, err := manifests.Load(paths, stdin)
	if err != nil {
		return nil, fmt.Errorf("read old objects: %w", err)
	}
	olds := map[objectKey]*unstructured.Unstructured{}
	for _, d := range docs {
		olds[keyOf(d.Object)] = d.Object
	}
	return olds, nil
}

// judgeDoc judges one document: a create, or an update of its old object.
func (s Set) judgeDoc(ctx context.Context, d manifests.Document, olds map[objectKey]*unstructured.Unstructured, o Options) Result {
	r := resultOf(d)
	c, ok := s[d.Object.GroupVersionKind().GroupKind()]
	if !ok {
		r.Problem = noSchema(d.Object.GroupVersionKind(), o.schemas())
		return r
	}
	req := Request{Object: d.Object, Subresource: o.Subresource, Namespace: o.Namespace, FieldValidation: o.FieldValidation}
	r.Operation = "CREATE"
	if olds != nil {
		old, ok := olds[keyOf(d.Object)]
		if !ok && c.NamespaceScoped() && d.Object.GetNamespace() == "" {
			k := keyOf(d.Object)
			k.namespace = c.requestNamespace(d.Object, o.Namespace)
			old, ok = olds[k]
		}
		if !ok {
			r.Problem = "no stored object of this kind, namespace and name among the old objects: an update needs the object it replaces"
			return r
		}
		req.Old, r.Operation = old, "UPDATE"
		if o.Subresource != "" {
			r.Operation += " " + o.Subresource
		}
	}
	v, err := c.Judge(ctx, req)
	if err != nil {
		r.Problem = err.Error()
		return r
	}
	r.Allowed, r.Message, r.Errors, r.Warnings = v.Allowed, v.Message, v.Errors, v.Warnings
	return r
}
