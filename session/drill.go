package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/hookback/hookback/fault"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/lint"
	"github.com/hookback/hookback/plan"
)

// drillRequestTimeout bounds each of the drill's requests: past the 34 s
// a request without a timeout parameter gets on kube-apiserver 1.36.
const drillRequestTimeout = 40 * time.Second

// Drill registers c's webhooks as Run does (scoped, labelled, removed at
// the end of each fault and after a crash by the next run), once per
// fault, with that fault injected, and sends the dry-run requests the
// cluster needs to heal: a pod in each scope namespace and in kube-system,
// a node status update, a node lease renewal, each of own: the pods your
// webhooks' Services need to come back, and each of objects, created in
// the version it names. It reports how the apiserver answered each.
func Drill(ctx context.Context, c *plan.Config, faults []fault.Fault, own []lint.OwnPod, objects []*unstructured.Unstructured) (*DrillReport, error) {
	kc, err := kubeconfig.Load(c.Options().Kubeconfig)
	if err != nil {
		return nil, err
	}
	cs, err := kc.Clientset(drillRequestTimeout)
	if err != nil {
		return nil, err
	}
	namespaces := c.Options().Scope.Namespaces
	mine, err := objectProbes(kc, cs, objects, namespaces)
	if err != nil {
		return nil, err
	}
	probes := append(drillProbes(namespaces, own), mine...)
	rep := &DrillReport{}
	for _, f := range faults {
		results, err := drillOne(ctx, c, f, cs, probes)
		if err != nil {
			return rep, fmt.Errorf("drill fault %s: %w", f, err)
		}
		rep.Results = append(rep.Results, results...)
	}
	return rep, nil
}

// drillOne runs one session with f injected, sends the probes once it is
// ready, and stops it (deregistering) before it returns.
func drillOne(ctx context.Context, c *plan.Config, f fault.Fault, cs kubernetes.Interface, probes []drillProbe) ([]DrillResult, error) {
	ready := make(chan struct{})
	run := c.With(func(o *plan.Options) {
		o.User.Fault, o.Out, o.OnReady = f.String(), io.Discard, func() { close(ready) }
	})
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- Run(sctx, run) }()
	select {
	case err := <-done:
		if err == nil {
			err = errors.New("the session stopped before it was ready")
		}
		return nil, err
	case <-ready:
	}
	var results []DrillResult
	for _, p := range probes {
		results = append(results, p.send(ctx, cs, f))
	}
	stop()
	return results, <-done
}

// drillProbe is one request of the drill.
type drillProbe struct {
	name, namespace string
	send1           func(ctx context.Context, cs kubernetes.Interface) error
}

func (p drillProbe) send(ctx context.Context, cs kubernetes.Interface, f fault.Fault) DrillResult {
	rctx, cancel := context.WithTimeout(ctx, drillRequestTimeout)
	defer cancel()
	sent := time.Now()
	err := p.send1(rctx, cs)
	r := DrillResult{Fault: f.String(), Request: p.name, Namespace: p.namespace, Latency: time.Since(sent).Round(time.Millisecond).String()}
	r.Outcome, r.Message = outcome(err)
	return r
}

var dryRun = []string{metav1.DryRunAll}

// The requests of the drill that are not pod creates.
const (
	drillNodeStatus = "node status update"
	drillLease      = "lease renewal"
	// drillOwnPod is a pod of your webhook's own workload.
	drillOwnPod = "own pod"
)

func drillProbes(namespaces []string, own []lint.OwnPod) []drillProbe {
	var probes []drillProbe
	for _, o := range own {
		probes = append(probes, drillProbe{name: drillOwnPod + " " + o.Workload, namespace: o.Namespace, send1: func(ctx context.Context, cs kubernetes.Interface) error {
			var pod corev1.Pod
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Pod, &pod); err != nil {
				return fmt.Errorf("%s's pod template: %w", o.Workload, err)
			}
			_, err := cs.CoreV1().Pods(o.Namespace).Create(ctx, &pod, metav1.CreateOptions{DryRun: dryRun})
			return err
		}})
	}
	for _, ns := range append(append([]string{}, namespaces...), metav1.NamespaceSystem) {
		probes = append(probes, drillProbe{name: "pod create", namespace: ns, send1: func(ctx context.Context, cs kubernetes.Interface) error {
			_, err := cs.CoreV1().Pods(ns).Create(ctx, drillPod(), metav1.CreateOptions{DryRun: dryRun})
			return err
		}})
	}
	return append(probes,
		drillProbe{name: drillNodeStatus, send1: nodeStatusUpdate},
		drillProbe{name: drillLease, namespace: corev1.NamespaceNodeLease, send1: leaseRenewal})
}

func drillPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "hookback-drill-"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "drill", Image: "registry.k8s.io/pause:3.10"}}}}
}

// nodeStatusUpdate sends a node's status back unchanged, as the kubelet
// does on every heartbeat.
func nodeStatusUpdate(ctx context.Context, cs kubernetes.Interface) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return err
	}
	if len(nodes.Items) == 0 {
		return errNotSent
	}
	_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, &nodes.Items[0], metav1.UpdateOptions{DryRun: dryRun})
	return err
}

// leaseRenewal renews a node's lease (dry run), or creates one when the
// cluster has none.
func leaseRenewal(ctx context.Context, cs kubernetes.Interface) error {
	leases := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	list, err := leases.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return err
	}
	now := metav1.NewMicroTime(time.Now())
	if len(list.Items) == 0 {
		_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{GenerateName: "hookback-drill-"},
			Spec: coordinationv1.LeaseSpec{RenewTime: &now}}, metav1.CreateOptions{DryRun: dryRun})
		return err
	}
	l := list.Items[0]
	l.Spec.RenewTime = &now
	_, err = leases.Update(ctx, &l, metav1.UpdateOptions{DryRun: dryRun})
	return err
}

// errNotSent marks a probe with nothing to send (no node).
var errNotSent = errors.New("nothing to send")

// outcome says how the apiserver answered.
func outcome(err error) (string, string) {
	if err == nil {
		return DrillAdmitted, ""
	}
	msg := err.Error()
	switch {
	case errors.Is(err, errNotSent):
		return DrillSkipped, msg
	case strings.Contains(msg, "deadline exceeded") || strings.Contains(msg, "Timeout") || strings.Contains(msg, "timeout"):
		return DrillTimedOut, msg
	case strings.Contains(msg, "denied the request"):
		return DrillDenied, msg
	}
	return DrillFailed, msg
}
