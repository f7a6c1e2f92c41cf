package takeover

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/hookback/hookback/registration"
)

// Clients are what a take-over reads and writes with: typed reads of the
// Deployment's neighbours, and the webhook configurations and CRDs read
// and patched as they are stored (fields client-go does not know kept).
type Clients struct {
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
}

// Resources of the objects a take-over writes, by kind.
var (
	crdResource   = registration.CRDResource
	hookResources = map[string]schema.GroupVersionResource{
		registration.KindMutatingHook:   {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"},
		registration.KindValidatingHook: {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
	}
)

// Operator is what one Target's take-over touches, as found in the cluster.
type Operator struct {
	Target
	// Replicas are the Deployment's replicas when found.
	Replicas int32
	// Services are the Services (namespace/name) whose selector selects
	// the Deployment's pods.
	Services []string
	// Pods are the Deployment's pods when found: their names identify its
	// manager's leader-election Lease.
	Pods []string
	// Configurations are the webhook configurations with a webhook served
	// by one of Services, with those webhooks' names.
	Configurations []Configuration
	// CRDs are the CustomResourceDefinitions whose conversion webhook one
	// of Services serves.
	CRDs []string
	// HPAs are the HorizontalPodAutoscalers that scale the Deployment.
	HPAs []string
	// Leases are the Leases (in the Deployment's namespace) that one of its
	// pods holds: its manager's leader election.
	Leases []string
}

// Configuration is one webhook configuration a take-over redirects.
type Configuration struct {
	Kind, Name string
	// Webhooks are the names of its webhooks that call the operator.
	Webhooks []string
	// Namespaces say whose objects those webhooks review, from their
	// namespaceSelector: "every namespace", or the selector.
	Namespaces []string
}

// Key is KIND/NAME.
func (c Configuration) Key() string { return c.Kind + "/" + c.Name }

// Discover finds what taking over t touches. A Deployment that OLM owns
// is refused with the manual step (OLM would scale it back and re-write
// its webhooks).
func Discover(ctx context.Context, c Clients, t Target) (*Operator, error) {
	d, err := c.Client.AppsV1().Deployments(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("take over %s: no such Deployment: check its name and namespace (kubectl get deployments -A)", t)
	}
	if err != nil {
		return nil, fmt.Errorf("take over %s: %w", t, err)
	}
	if err := refuseOLM(ctx, c, d); err != nil {
		return nil, err
	}
	op := &Operator{Target: t, Replicas: 1}
	if d.Spec.Replicas != nil {
		op.Replicas = *d.Spec.Replicas
	}
	if op.Services, err = servicesOf(ctx, c.Client, d); err != nil {
		return nil, err
	}
	if op.Pods, err = podsOf(ctx, c.Client, d); err != nil {
		return nil, err
	}
	if op.Configurations, err = configurationsOf(ctx, c.Dynamic, op.Services); err != nil {
		return nil, err
	}
	if op.CRDs, err = crdsOf(ctx, c.Dynamic, op.Services); err != nil {
		return nil, err
	}
	if op.HPAs, err = hpasOf(ctx, c.Client, t); err != nil {
		return nil, err
	}
	if op.Leases, err = leasesOf(ctx, c.Client, t.Namespace, op.Pods); err != nil {
		return nil, err
	}
	return op, nil
}

// servicesOf are the Services of d's namespace whose selector selects its
// pods' template labels.
func servicesOf(ctx context.Context, cs kubernetes.Interface, d *appsv1.Deployment) ([]string, error) {
	list, err := cs.CoreV1().Services(d.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list Services in %s: %w", d.Namespace, err)
	}
	pod := labels.Set(d.Spec.Template.Labels)
	var out []string
	for _, s := range list.Items {
		if len(s.Spec.Selector) > 0 && labels.SelectorFromSet(s.Spec.Selector).Matches(pod) {
			out = append(out, s.Namespace+"/"+s.Name)
		}
	}
	return out, nil
}

func podsOf(ctx context.Context, cs kubernetes.Interface, d *appsv1.Deployment) ([]string, error) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("Deployment %s/%s: its selector: %w", d.Namespace, d.Name, err)
	}
	list, err := cs.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("list the pods of Deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	out := make([]string, 0, len(list.Items))
	for _, p := range list.Items {
		out = append(out, p.Name)
	}
	return out, nil
}

// configurationsOf are the webhook configurations with a webhook whose
// clientConfig.service is one of services, sorted by kind and name.
func configurationsOf(ctx context.Context, dyn dynamic.Interface, services []string) ([]Configuration, error) {
	var out []Configuration
	for _, kind := range []string{registration.KindMutatingHook, registration.KindValidatingHook} {
		list, err := dyn.Resource(hookResources[kind]).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list %ss: %w", kind, err)
		}
		for i := range list.Items {
			// One a crashed session left taken over is read as it was.
			o, err := Original(&list.Items[i])
			if err != nil {
				return nil, err
			}
			if hooks, affects := hooksServedBy(o, services); len(hooks) > 0 {
				out = append(out, Configuration{Kind: kind, Name: o.GetName(), Webhooks: hooks, Namespaces: affects})
			}
		}
	}
	return out, nil
}

// hooksServedBy names o's webhooks whose clientConfig.service is one of
// services, and the namespaces they review.
func hooksServedBy(o *unstructured.Unstructured, services []string) (names, namespaces []string) {
	hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
	for _, h := range hooks {
		hm, _ := h.(map[string]any)
		if !slices.Contains(services, serviceOf(hm, "clientConfig", "service")) {
			continue
		}
		name, _ := hm["name"].(string)
		names = append(names, name)
		if ns := reviewed(hm); !slices.Contains(namespaces, ns) {
			namespaces = append(namespaces, ns)
		}
	}
	return names, namespaces
}

// reviewed says whose objects a webhook reviews, from its namespaceSelector.
func reviewed(hook map[string]any) string {
	m, _, _ := unstructured.NestedMap(hook, "namespaceSelector")
	var sel metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &sel); err != nil {
		return "namespaces matching its namespaceSelector"
	}
	s, err := metav1.LabelSelectorAsSelector(&sel)
	switch {
	case err != nil:
		return "namespaces matching its namespaceSelector"
	case s.Empty():
		return "every namespace"
	}
	if ns, ok := sel.MatchLabels["kubernetes.io/metadata.name"]; ok && len(sel.MatchLabels) == 1 && len(sel.MatchExpressions) == 0 {
		return "namespace " + ns
	}
	return "namespaces " + s.String()
}

// serviceOf is namespace/name of the service at path in m, "" for none.
func serviceOf(m map[string]any, path ...string) string {
	ns, _, _ := unstructured.NestedString(m, append(slices.Clone(path), "namespace")...)
	name, _, _ := unstructured.NestedString(m, append(slices.Clone(path), "name")...)
	if name == "" {
		return ""
	}
	return ns + "/" + name
}

// crdsOf are the CRDs whose conversion webhook one of services serves. A
// user who may not list CRDs has none to take over.
func crdsOf(ctx context.Context, dyn dynamic.Interface, services []string) ([]string, error) {
	list, err := dyn.Resource(crdResource).List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list CustomResourceDefinitions: %w", err)
	}
	var out []string
	for i := range list.Items {
		o, err := Original(&list.Items[i])
		if err != nil {
			return nil, err
		}
		if slices.Contains(services, serviceOf(o.Object, "spec", "conversion", "webhook", "clientConfig", "service")) {
			out = append(out, o.GetName())
		}
	}
	return out, nil
}

func hpasOf(ctx context.Context, cs kubernetes.Interface, t Target) ([]string, error) {
	list, err := cs.AutoscalingV2().HorizontalPodAutoscalers(t.Namespace).List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list HorizontalPodAutoscalers in %s: %w", t.Namespace, err)
	}
	var out []string
	for _, h := range list.Items {
		if r := h.Spec.ScaleTargetRef; r.Kind == "Deployment" && r.Name == t.Name {
			out = append(out, h.Name)
		}
	}
	return out, nil
}

// leasesOf are the Leases of namespace held by one of pods: client-go's
// leader election (controller-runtime's) names its holder POD_UUID.
func leasesOf(ctx context.Context, cs kubernetes.Interface, namespace string, pods []string) ([]string, error) {
	if len(pods) == 0 {
		return nil, nil
	}
	list, err := cs.CoordinationV1().Leases(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list Leases in %s: %w", namespace, err)
	}
	var out []string
	for _, l := range list.Items {
		if l.Spec.HolderIdentity != nil && heldBy(*l.Spec.HolderIdentity, pods) {
			out = append(out, l.Name)
		}
	}
	return out, nil
}

func heldBy(holder string, pods []string) bool {
	for _, p := range pods {
		if holder == p || strings.HasPrefix(holder, p+"_") {
			return true
		}
	}
	return false
}

// ErrOLM marks a Deployment that OLM owns, which is not taken over.
var ErrOLM = errors.New("takeover: the Deployment is owned by OLM")
