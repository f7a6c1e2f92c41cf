package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hookback/hookback/tunnel"
)

const controlPort = 9443

// portForwardTunnel runs a relay on loopback standing in for the relay pod:
// a fake pod on the kwok node whose control port kwok forwards to it, which
// the laptop side reaches through the apiserver's pod port-forward.
func portForwardTunnel(ctx context.Context, kubeconfig, local string) (string, func(), error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return "", nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return "", nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return "", nil, err
	}
	r, err := startRelay(ctx)
	if err != nil {
		return "", nil, err
	}
	ns := "bench-tunnel-" + strconv.Itoa(os.Getpid())
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) }
	if err := relayPod(ctx, cs, dyn, ns, r.ControlAddr()); err != nil {
		cleanup()
		return "", nil, err
	}
	addr, err := attach(ctx, r, local, &tunnel.PortForward{Config: rc, Client: cs, Namespace: ns, Port: controlPort,
		Pod: func(context.Context) (string, error) { return "relay", nil }})
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return addr, cleanup, nil
}

func relayPod(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, ns string, control net.Addr) error {
	// The namespace's default ServiceAccount comes from the controller
	// manager; the pod does not mount its token.
	f := false
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "relay"},
		Spec: corev1.PodSpec{AutomountServiceAccountToken: &f,
			Containers: []corev1.Container{{Name: "relay", Image: "registry.invalid/hookback"}}},
	}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the relay pod: %w", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "relay", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		return fmt.Errorf("the relay pod is not running: %w", err)
	}
	port := int64(control.(*net.TCPAddr).Port)
	pf := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "PortForward",
		"metadata": map[string]any{"name": "relay", "namespace": ns},
		"spec": map[string]any{"forwards": []any{map[string]any{
			"ports": []any{int64(controlPort)}, "target": map[string]any{"address": "127.0.0.1", "port": port}}}},
	}}
	gvr := schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "portforwards"}
	if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, pf, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the PortForward: %w", err)
	}
	return nil
}
