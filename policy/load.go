package policy

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/hookback/hookback/internal/errkind"
	"github.com/hookback/hookback/manifests"
)

// ErrPolicy marks a policy manifest hookback cannot use: an unsupported
// API version, a binding without its policy, a document that does not
// decode.
var ErrPolicy = errors.New("policy: bad policy manifest")

// Group and Version are the only API version of the policy kinds hookback
// reads: the one Kubernetes 1.36 serves them at.
const (
	Group   = admissionregistrationv1.GroupName
	Version = "v1"
)

// Kinds of the policy objects.
const (
	KindValidating        = "ValidatingAdmissionPolicy"
	KindValidatingBinding = "ValidatingAdmissionPolicyBinding"
	KindMutating          = "MutatingAdmissionPolicy"
	KindMutatingBinding   = "MutatingAdmissionPolicyBinding"
)

var policyKinds = []string{KindValidating, KindValidatingBinding, KindMutating, KindMutatingBinding}

// Set is what Load read: the policies, their bindings, and every other
// object of the manifests (candidate params, and Namespaces for the
// namespaceSelectors when no cluster is at hand).
type Set struct {
	Validating        []*admissionregistrationv1.ValidatingAdmissionPolicy
	ValidatingBinding []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	Mutating          []*admissionregistrationv1.MutatingAdmissionPolicy
	MutatingBinding   []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	// Objects are the other documents, in the order read.
	Objects []*unstructured.Unstructured
}

// Load reads policies like --webhook-config reads webhook configurations:
// each path a file, a directory, a kustomize directory, or "-" for stdin.
func Load(paths []string, stdin io.Reader) (*Set, error) {
	docs, err := manifests.Load(paths, stdin)
	if err != nil {
		return nil, fmt.Errorf("load policies: %w", err)
	}
	return FromDocuments(docs)
}

// FromDocuments sorts manifest documents into a Set; every problem is
// reported at once, each naming its document.
func FromDocuments(docs []manifests.Document) (*Set, error) {
	s := &Set{}
	var errs []error
	for _, d := range docs {
		if err := s.add(d.Object); err != nil {
			errs = append(errs, errkind.New(ErrPolicy, fmt.Errorf("%s: %w", d.Location(), err)))
		}
	}
	if err := s.check(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

func (s *Set) add(o *unstructured.Unstructured) error {
	gvk := o.GroupVersionKind()
	if !slices.Contains(policyKinds, gvk.Kind) || gvk.Group != Group {
		s.Objects = append(s.Objects, o)
		return nil
	}
	if gvk.Version != Version {
		return errkind.New(ErrPolicy, fmt.Errorf("%s %q is %s: hookback reads the policy kinds at %s/%s only (what Kubernetes 1.36 serves); change apiVersion to %s/%s (the fields are the same for a policy written for v1beta1)",
			gvk.Kind, o.GetName(), gvk.GroupVersion(), Group, Version, Group, Version))
	}
	var into runtime.Object
	switch gvk.Kind {
	case KindValidating:
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
		s.Validating, into = append(s.Validating, p), p
	case KindValidatingBinding:
		b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		s.ValidatingBinding, into = append(s.ValidatingBinding, b), b
	case KindMutating:
		p := &admissionregistrationv1.MutatingAdmissionPolicy{}
		s.Mutating, into = append(s.Mutating, p), p
	case KindMutatingBinding:
		b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
		s.MutatingBinding, into = append(s.MutatingBinding, b), b
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, into, true); err != nil {
		return fmt.Errorf("%s %q: %w", gvk.Kind, o.GetName(), err)
	}
	defaultObject(into)
	return nil
}

// check reports bindings whose policy is not in the set, and the set that
// holds no policy at all (most likely a wrong path).
func (s *Set) check() error {
	if len(s.Validating)+len(s.Mutating) == 0 {
		return errkind.New(ErrPolicy, fmt.Errorf("no ValidatingAdmissionPolicy or MutatingAdmissionPolicy (%s/%s) in the policy manifests", Group, Version))
	}
	var errs []error
	for _, b := range s.ValidatingBinding {
		if !slices.ContainsFunc(s.Validating, func(p *admissionregistrationv1.ValidatingAdmissionPolicy) bool { return p.Name == b.Spec.PolicyName }) {
			errs = append(errs, errkind.New(ErrPolicy, fmt.Errorf("%s %q binds policy %q, which the policy manifests do not hold", KindValidatingBinding, b.Name, b.Spec.PolicyName)))
		}
	}
	for _, b := range s.MutatingBinding {
		if !slices.ContainsFunc(s.Mutating, func(p *admissionregistrationv1.MutatingAdmissionPolicy) bool { return p.Name == b.Spec.PolicyName }) {
			errs = append(errs, errkind.New(ErrPolicy, fmt.Errorf("%s %q binds policy %q, which the policy manifests do not hold", KindMutatingBinding, b.Name, b.Spec.PolicyName)))
		}
	}
	return errors.Join(errs...)
}

// Unbound names the policies no binding of the set refers to: the
// apiserver never evaluates a policy without a binding, and neither does
// hookback.
func (s *Set) Unbound() []string {
	var names []string
	for _, p := range s.Validating {
		if !slices.ContainsFunc(s.ValidatingBinding, func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) bool {
			return b.Spec.PolicyName == p.Name
		}) {
			names = append(names, KindValidating+"/"+p.Name)
		}
	}
	for _, p := range s.Mutating {
		if !slices.ContainsFunc(s.MutatingBinding, func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) bool {
			return b.Spec.PolicyName == p.Name
		}) {
			names = append(names, KindMutating+"/"+p.Name)
		}
	}
	return names
}

// CheckServed says whether a cluster serves the kinds the set uses at
// admissionregistration.k8s.io/v1: versions are the group's versions the
// cluster serves, resources the resources it serves at v1 (both from
// discovery). The error names the versions it does serve.
func (s *Set) CheckServed(versions []string, resources []string) error {
	var need []string
	if len(s.Validating) > 0 {
		need = append(need, "validatingadmissionpolicies", "validatingadmissionpolicybindings")
	}
	if len(s.Mutating) > 0 {
		need = append(need, "mutatingadmissionpolicies", "mutatingadmissionpolicybindings")
	}
	var missing []string
	for _, r := range need {
		if !slices.Contains(resources, r) {
			missing = append(missing, r)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	served := "none"
	if len(versions) > 0 {
		served = strings.Join(versions, ", ")
	}
	return fmt.Errorf("the cluster does not serve %s at %s/%s (its %s versions: %s): the policies need a cluster that serves them at %s (Kubernetes 1.36 does)",
		strings.Join(missing, ", "), Group, Version, Group, served, Version)
}

// gvkOf is the GroupVersionKind of a typed object of the set.
func gvkOf(kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: Group, Version: Version, Kind: kind}
}

// CheckCluster is CheckServed with the cluster's discovery.
func (s *Set) CheckCluster(d discovery.DiscoveryInterface) error {
	groups, err := d.ServerGroups()
	if err != nil {
		return fmt.Errorf("discover the cluster's API groups: %w", err)
	}
	var versions []string
	for _, g := range groups.Groups {
		if g.Name == Group {
			for _, v := range g.Versions {
				versions = append(versions, v.Version)
			}
		}
	}
	var resources []string
	if slices.Contains(versions, Version) {
		list, err := d.ServerResourcesForGroupVersion(Group + "/" + Version)
		if err != nil {
			return fmt.Errorf("discover %s/%s: %w", Group, Version, err)
		}
		for _, r := range list.APIResources {
			resources = append(resources, r.Name)
		}
	}
	return s.CheckServed(versions, resources)
}
