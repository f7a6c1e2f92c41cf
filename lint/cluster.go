package lint

import (
	"context"
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/hookback/hookback/manifests"
)

// ClusterSource is the Document.Source of what ReadCluster read.
const ClusterSource = "<cluster>"

// Live is what only a running cluster tells: the online rules read it, and
// skip their checks when a Live is nil (offline).
type Live struct {
	// ReadyEndpoints counts the ready endpoints of each Service
	// ("namespace/name") a webhook calls, from its EndpointSlices.
	ReadyEndpoints map[string]int
	// P99 is each webhook's 99th percentile latency in seconds, from the
	// apiserver's apiserver_admission_webhook_admission_duration_seconds;
	// nil when /metrics could not be read (MetricsErr says why).
	P99        map[string]float64
	MetricsErr error
}

// ReadCluster reads the cluster's webhook configurations, admission
// policies and their bindings, its namespaces' labels, and the Services, workloads and ready endpoints behind every
// webhook that calls a Service, as documents (Source ClusterSource) for
// Read, and what only the cluster tells (Live).
func ReadCluster(ctx context.Context, cs kubernetes.Interface) ([]manifests.Document, *Live, error) {
	var docs []manifests.Document
	add := func(apiVersion, kind string, objs ...any) error {
		for _, o := range objs {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
			if err != nil {
				return fmt.Errorf("read %s: %w", kind, err)
			}
			u := &unstructured.Unstructured{Object: m}
			u.SetAPIVersion(apiVersion)
			u.SetKind(kind)
			docs = append(docs, manifests.Document{Source: ClusterSource, Index: len(docs) + 1, Object: u})
		}
		return nil
	}
	reg := cs.AdmissionregistrationV1()
	mut, err := reg.MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("list mutating webhook configurations: %w", err)
	}
	val, err := reg.ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("list validating webhook configurations: %w", err)
	}
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("list namespaces: %w", err)
	}
	services := map[string]bool{}
	for i := range mut.Items {
		for _, w := range mut.Items[i].Webhooks {
			if s := w.ClientConfig.Service; s != nil {
				services[s.Namespace+"/"+s.Name] = true
			}
		}
		if err := add("admissionregistration.k8s.io/v1", kindMutating, &mut.Items[i]); err != nil {
			return nil, nil, err
		}
	}
	for i := range val.Items {
		for _, w := range val.Items[i].Webhooks {
			if s := w.ClientConfig.Service; s != nil {
				services[s.Namespace+"/"+s.Name] = true
			}
		}
		if err := add("admissionregistration.k8s.io/v1", kindValidating, &val.Items[i]); err != nil {
			return nil, nil, err
		}
	}
	for i := range nss.Items {
		if err := add("v1", kindNamespace, &nss.Items[i]); err != nil {
			return nil, nil, err
		}
	}
	if err := readPolicies(ctx, cs, add); err != nil {
		return nil, nil, err
	}
	live := &Live{ReadyEndpoints: map[string]int{}}
	if err := readBackends(ctx, cs, slices.Sorted(maps.Keys(services)), live, add); err != nil {
		return nil, nil, err
	}
	live.P99, live.MetricsErr = readLatency(ctx, cs)
	return docs, live, nil
}

// readBackends reads each Service, its ready endpoints, and the
// workloads of its namespace.
func readBackends(ctx context.Context, cs kubernetes.Interface, services []string, live *Live, add func(string, string, ...any) error) error {
	seenNS := map[string]bool{}
	for _, key := range services {
		ns, name := splitKey(key)
		svc, err := cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if err := add("v1", kindService, svc); err != nil {
				return err
			}
		}
		eps, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + name})
		if err != nil {
			return fmt.Errorf("list endpoint slices of service %s: %w", key, err)
		}
		ready := 0
		for _, s := range eps.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready == nil || *e.Conditions.Ready {
					ready += len(e.Addresses)
				}
			}
		}
		live.ReadyEndpoints[key] = ready
		if seenNS[ns] {
			continue
		}
		seenNS[ns] = true
		deps, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list deployments in %s: %w", ns, err)
		}
		for i := range deps.Items {
			if err := add("apps/v1", "Deployment", &deps.Items[i]); err != nil {
				return err
			}
		}
		sts, err := cs.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list statefulsets in %s: %w", ns, err)
		}
		for i := range sts.Items {
			if err := add("apps/v1", "StatefulSet", &sts.Items[i]); err != nil {
				return err
			}
		}
		ds, err := cs.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list daemonsets in %s: %w", ns, err)
		}
		for i := range ds.Items {
			if err := add("apps/v1", "DaemonSet", &ds.Items[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func splitKey(key string) (ns, name string) {
	for i := range key {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}

// Merge is the cluster's documents with the user's applied over them: a
// user's object replaces the cluster's of the same kind, namespace and
// name (one written without a namespace replaces it in any).
func Merge(cluster, user []manifests.Document) []manifests.Document {
	type key struct{ kind, name string }
	mine := map[key][]string{}
	for _, d := range user {
		k := key{d.Object.GetKind(), d.Object.GetName()}
		mine[k] = append(mine[k], d.Object.GetNamespace())
	}
	var out []manifests.Document
	for _, d := range cluster {
		nss, ok := mine[key{d.Object.GetKind(), d.Object.GetName()}]
		if ok && (slices.Contains(nss, d.Object.GetNamespace()) || slices.Contains(nss, "")) {
			continue
		}
		out = append(out, d)
	}
	return append(out, user...)
}
