package e2e

import (
	"context"
	"os/exec"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hookback/hookback/builtin/controllers"
	"github.com/hookback/hookback/registration"
)

// apiserver stops or starts the local control plane's kube-apiserver
// (hack/cluster/apiserver); etcd keeps the cluster's state.
func apiserver(t *testing.T, action string) {
	t.Helper()
	cmd := exec.Command(repoPath("hack", "cluster", "apiserver"), action)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/cluster/apiserver %s: %v\n%s", action, err, out)
	}
}

// TestApiserverRestart stops the kube-apiserver for longer than the
// session's Lease and starts it again: hookback's informers and controllers
// resume and reconcile a change made before they reconnected (a pod
// annotated gets its label), the Lease and configurations are renewed, the
// canary verifies again and a log line says so, and admission works.
// Not parallel: every other session loses the apiserver too.
func TestApiserverRestart(t *testing.T) {
	requireLocal(t, "restarts the control plane's kube-apiserver (hack/cluster/apiserver) and waits for kwok to run a pod")
	ns := namespace(t)
	p := start(t, "--webhooks", "pod-name", "--controllers", controllers.PodNameLabelName, "--lease-duration", "6s")
	pod := ctlBarePod(t, ns, "survivor", "", nil)
	p.ready(t)
	configs, err := sessionObjects(context.Background(), p.session)
	if err != nil {
		t.Fatal(err)
	}

	restarted := false
	t.Cleanup(func() {
		if !restarted {
			apiserver(t, "start")
		}
	})
	lease, err := env.client.CoordinationV1().Leases("default").Get(context.Background(), registration.LeaseName(p.session), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	apiserver(t, "stop")
	p.whWaitLogLine(t, "session heartbeat failed")
	// Down past the Lease's last renewal plus its duration (and a renewal
	// interval): to anyone looking, the session is dead.
	expiry := lease.Spec.RenewTime.Add(7 * time.Second)
	eventually(t, "the session Lease to expire during the outage", func(context.Context) (bool, error) {
		return time.Now().After(expiry), nil
	})
	apiserver(t, "start")
	restarted = true
	// Before hookback's watches are back (client-go's reflectors back off).
	ctlAnnotate(t, ns, pod.Name, controllers.AddPodNameLabelAnnotation, "true")

	ctlLabelled(t, ns, pod.Name, true)
	p.whWaitLogLine(t, "session heartbeat recovered")
	p.whWaitLogLine(t, "verified again: the apiserver calls back", "apiserver reachable again")
	eventually(t, "the session Lease renewed and live", func(ctx context.Context) (bool, error) {
		l, err := env.client.CoordinationV1().Leases("default").Get(ctx, registration.LeaseName(p.session), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return !registration.LeaseExpired(l, time.Now()), nil
	})
	if n, err := sessionObjects(context.Background(), p.session); err != nil || n != configs {
		t.Errorf("session objects after the restart: %d (%v), want %d", n, err, configs)
	}
	twoDevsDeniedPod(t, ns, p)
	if _, err := env.client.CoreV1().Pods(ns).Get(context.Background(), pod.Name, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}
