package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

const benchLabel = "hookback.dev/bench"

// namespaces creates the bench namespaces and deletes them all at the end.
type namespaces struct {
	client kubernetes.Interface
	mu     sync.Mutex
	names  []string
}

// create makes a namespace hookback-bench-<purpose>-xxxxx and waits for its
// default ServiceAccount, which pod creates need.
func (n *namespaces) create(ctx context.Context, purpose string) (*corev1.Namespace, error) {
	ns, err := n.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "hookback-bench-" + purpose + "-",
		Labels:       map[string]string{benchLabel: "true", "admission-webhook": optInLabel["admission-webhook"]},
	}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.names = append(n.names, ns.Name)
	n.mu.Unlock()
	for deadline := time.Now().Add(60 * time.Second); ; {
		_, err := n.client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return ns, nil
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			return nil, fmt.Errorf("default ServiceAccount of %s: %w", ns.Name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// deleteAll force-deletes the pods of every bench namespace (they are on no
// node, or on a fake one, so nothing needs to wait for a kubelet), deletes
// the namespaces and waits until they are gone.
func (n *namespaces) deleteAll(ctx context.Context) error {
	n.mu.Lock()
	names := n.names
	n.names = nil
	n.mu.Unlock()
	var errs []error
	zero := int64(0)
	for _, name := range names {
		err := n.client.CoreV1().Pods(name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
		if err := n.client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	for _, name := range names {
		for {
			_, err := n.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				log.Printf("namespace %s deleted", name)
				break
			}
			if ctx.Err() != nil {
				errs = append(errs, fmt.Errorf("namespace %s still there: %w", name, ctx.Err()))
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return errors.Join(errs...)
}

// shippedSelector is the namespaceSelector of the shipped template's
// cluster-wide webhooks; shippedOptIn that of pod-name and pod-lifespan,
// which select seed 002's label (the bench namespaces carry it).
const (
	shippedSelector = `operator: NotIn
        values: ["kube-system", "kube-public", "kube-node-lease"]`
	shippedOptIn = `matchLabels:
        admission-webhook: enabled`
	// shippedEviction marks pod-eviction, which selects every namespace.
	shippedEviction = `    # No namespaceSelector: kube-system is where a drain hurts`
)

// optInLabel is seed 002's namespace label, on every bench namespace: the
// opt-in built-ins are called for the bench's pods, as the review counters
// the bench checks prove.
var optInLabel = map[string]string{"admission-webhook": "enabled"}

// scopedTemplate is the shipped template narrowed to these namespaces:
// "every namespace but the system ones" becomes "only these", and the
// opt-in label is ANDed with the same list. The apiserver evaluates it the
// same way, and nobody else's pods are sent to the bench's hookback.
func scopedTemplate(shipped string, namespaces ...string) (string, error) {
	if !strings.Contains(shipped, shippedSelector) || !strings.Contains(shipped, shippedOptIn) || !strings.Contains(shipped, shippedEviction) {
		return "", errors.New("the template lacks the namespaceSelector excluding the system namespaces, the one selecting admission-webhook=enabled, or pod-eviction's comment, to scope; update bench/cluster")
	}
	q := make([]string, len(namespaces))
	for i, n := range namespaces {
		q[i] = strconv.Quote(n)
	}
	list := "[" + strings.Join(q, ", ") + "]"
	scoped := strings.ReplaceAll(shipped, shippedSelector, "operator: In\n        values: "+list)
	scoped = strings.ReplaceAll(scoped, shippedEviction, `    namespaceSelector:
      matchExpressions:
      - key: kubernetes.io/metadata.name
        operator: In
        values: `+list+"\n"+shippedEviction)
	return strings.ReplaceAll(scoped, shippedOptIn, shippedOptIn+`
      matchExpressions:
      - key: kubernetes.io/metadata.name
        operator: In
        values: `+list), nil
}

// writeFileAtomic replaces path the way editors do: write a temporary file
// next to it, then rename it over.
func writeFileAtomic(path, content string) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".swp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// podOptions shape the bench pods.
type podOptions struct {
	// hookbackMarkers adds the lifespan label and the xxl-agent annotations,
	// so pod-lifespan and pod-sidecar really patch.
	hookbackMarkers bool
	// schedulerName, when set, keeps the default scheduler away.
	schedulerName string
}

// benchPod is a realistic-ish pod: two containers with env, ports, probes,
// resources and mounts, a handful of labels and annotations, and a
// kubectl.kubernetes.io/last-applied-configuration annotation holding the
// pod as applied (about 1.5 KB), like a pod created with `kubectl apply`.
func benchPod(ns, name string, i int, o podOptions) *corev1.Pod {
	labels := map[string]string{
		"app.kubernetes.io/name":      "web",
		"app.kubernetes.io/instance":  "web-" + strconv.Itoa(i%50),
		"app.kubernetes.io/component": "frontend",
		"app.kubernetes.io/part-of":   "shop",
		"app.kubernetes.io/version":   "1.24.3",
		"team":                        "checkout",
	}
	annotations := map[string]string{
		"prometheus.io/scrape": "true",
		"prometheus.io/port":   "9090",
		"prometheus.io/path":   "/metrics",
		"acme.com/owner":       "checkout-team@acme.example",
	}
	if o.hookbackMarkers {
		labels["acme.com/lifespan-requested"] = "3"
		annotations["xxl-agent/enable"] = "true"
		annotations["xxl-agent/admin-address"] = "http://xxl-job-admin.jobs.svc:8080/xxl-job-admin"
		annotations["xxl-agent/target-container"] = "app"
		annotations["xxl-agent/job-name"] = "nightly-report"
	}
	grace := int64(30)
	cpu := func(s string) resource.Quantity { return resource.MustParse(s) }
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			SchedulerName:                 o.schedulerName,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.example.com/shop/web:1.24.3",
				Args:  []string{"--listen=:8080", "--metrics=:9090", "--config=/etc/web/config.yaml"},
				Ports: []corev1.ContainerPort{
					{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
					{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
				},
				Env: []corev1.EnvVar{
					{Name: "LOG_LEVEL", Value: "info"},
					{Name: "DATABASE_URL", Value: "postgres://web@db.shop.svc:5432/shop?sslmode=require"},
					{Name: "CACHE_ADDR", Value: "redis.shop.svc:6379"},
					{Name: "FEATURE_FLAGS", Value: "new-checkout,fast-search"},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: cpu("100m"), corev1.ResourceMemory: cpu("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: cpu("256Mi")},
				},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("http")}}, PeriodSeconds: 5},
				LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}, PeriodSeconds: 10, FailureThreshold: 3},
				VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/web", ReadOnly: true}, {Name: "tmp", MountPath: "/tmp"}},
			}, {
				Name:  "log-shipper",
				Image: "registry.example.com/platform/log-shipper:3.1.0",
				Env: []corev1.EnvVar{
					{Name: "SHIP_TO", Value: "https://logs.acme.example/ingest"},
					{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: cpu("20m"), corev1.ResourceMemory: cpu("32Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: cpu("64Mi")},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/var/log/web", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
	// What `kubectl apply` would have stored: the manifest as applied.
	applied, _ := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": labels, "annotations": annotations},
		"spec":     pod.Spec,
	})
	pod.Annotations = copyMap(annotations)
	pod.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = string(applied) + "\n"
	return pod
}

func copyMap(m map[string]string) map[string]string {
	c := make(map[string]string, len(m)+1)
	for k, v := range m {
		c[k] = v
	}
	return c
}

// runningStatus is what a kubelet reports for a running benchPod.
func runningStatus(pod *corev1.Pod, i int) corev1.PodStatus {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	ip := fmt.Sprintf("10.244.%d.%d", (i/250)%250, i%250+2)
	cond := func(t corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now}
	}
	st := corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			cond(corev1.PodReadyToStartContainers), cond(corev1.PodInitialized), cond(corev1.PodReady),
			cond(corev1.ContainersReady), cond(corev1.PodScheduled),
		},
		HostIP:    "10.0.0.1",
		HostIPs:   []corev1.HostIP{{IP: "10.0.0.1"}},
		PodIP:     ip,
		PodIPs:    []corev1.PodIP{{IP: ip}},
		StartTime: &now,
		QOSClass:  corev1.PodQOSBurstable,
	}
	for j, c := range pod.Spec.Containers {
		started := true
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name:         c.Name,
			Ready:        true,
			Started:      &started,
			Image:        c.Image,
			ImageID:      c.Image[:strings.LastIndexByte(c.Image, ':')] + "@sha256:" + fakeHash(i*7+j),
			ContainerID:  "containerd://" + fakeHash(i*13+j+1),
			State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			RestartCount: 0,
		})
	}
	return st
}

func fakeHash(i int) string {
	return strings.Repeat(fmt.Sprintf("%016x", uint64(i)*0x9e3779b97f4a7c15), 4)
}

// selectsPod reports whether a webhook with these rules and selectors is
// called for a CREATE of pod in ns.
func selectsPod(rules []admissionv1.RuleWithOperations, nsSel, objSel *metav1.LabelSelector, ns *corev1.Namespace, pod *corev1.Pod) bool {
	any := func(list []string, want ...string) bool {
		for _, s := range list {
			if slices.Contains(want, s) {
				return true
			}
		}
		return false
	}
	ruled := false
	for _, r := range rules {
		if any(opsStrings(r.Operations), "CREATE", "*") && any(r.APIGroups, "", "*") &&
			any(r.APIVersions, "v1", "*") && any(r.Resources, "pods", "*", "*/*") {
			ruled = true
		}
	}
	if !ruled {
		return false
	}
	matches := func(sel *metav1.LabelSelector, l map[string]string) bool {
		if sel == nil {
			return true
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		return err != nil || s.Matches(labels.Set(l))
	}
	return matches(nsSel, ns.Labels) && matches(objSel, pod.Labels)
}

func opsStrings(ops []admissionv1.OperationType) []string {
	s := make([]string, len(ops))
	for i, o := range ops {
		s[i] = string(o)
	}
	return s
}
