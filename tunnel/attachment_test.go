package tunnel

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// TestPullFailure: start --tunnel gives up at once on a relay image the
// kubelet cannot pull, and keeps waiting for anything else.
func TestPullFailure(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		fails        bool
	}{
		{name: "backing off a pull", reason: "ImagePullBackOff", fails: true},
		{name: "a malformed reference", reason: "InvalidImageName", fails: true},
		{name: "a first failed pull may still succeed", reason: "ErrImagePull"},
		{name: "creating the container", reason: "ContainerCreating"},
		{name: "no status yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tun := testSession(t, fakeClients(relayPod("s", "tun", tc.reason, false)), "s", "tun")
			why := tun.pullFailure(context.Background())
			if got := why != ""; got != tc.fails {
				t.Fatalf("pullFailure = %q, want failing: %v", why, tc.fails)
			}
			if tc.fails && !strings.Contains(why, tc.reason) {
				t.Errorf("pullFailure = %q, want it to name %s", why, tc.reason)
			}
		})
	}
}

// relayPod is session's relay pod in ns, waiting for reason when it is
// not empty, running and ready when ready.
func relayPod(session, ns, reason string, ready bool) *corev1.Pod {
	spec := Spec{Name: RelayName(session), Namespace: ns, Session: session, Image: "registry.invalid/hookback:dev"}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: spec.Name + "-1", Namespace: ns, Labels: Manifests(spec).Deployment.Spec.Template.Labels}}
	if reason != "" {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "relay", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "pulling " + spec.Image}}}}
	}
	if ready {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	return p
}

// TestPodName: the port-forward goes to the relay's ready pod; else the
// error says why none is.
func TestPodName(t *testing.T) {
	for _, tc := range []struct {
		name string
		pods []runtime.Object
		want string // the pod, or what the error says
	}{
		{name: "ready", pods: []runtime.Object{relayPod("s", "tun", "", true)}, want: "hookback-relay-s-1"},
		{name: "no pod yet", want: "no pod yet"},
		{name: "waiting", pods: []runtime.Object{relayPod("s", "tun", "ContainerCreating", false)}, want: "ContainerCreating"},
		{name: "another session's pod is not ours", pods: []runtime.Object{relayPod("other", "tun", "", true)}, want: "no pod yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := testSession(t, fakeClients(tc.pods...), "s", "tun").podName(context.Background())
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("podName = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestAttachmentWait: Wait gives up on a relay image the cluster cannot
// pull without waiting out the timeout, and otherwise after the timeout,
// saying how to look at the relay.
func TestAttachmentWait(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		timeout time.Duration
		want    []string
	}{
		{name: "an image that cannot be pulled fails before the timeout", pod: relayPod("s", "tun", "ImagePullBackOff", false), timeout: time.Minute,
			want: []string{"relay image img cannot be pulled", "ImagePullBackOff", "--relay-image"}},
		{name: "a pod that never gets ready fails after the timeout", pod: relayPod("s", "tun", "ContainerCreating", false), timeout: 300 * time.Millisecond,
			want: []string{"did not attach within 300ms", "ContainerCreating", "kubectl -n tun describe pod -l hookback.dev/relay=hookback-relay-s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tun := testSession(t, fakeClients(tc.pod), "s", "tun")
			tun.o.AttachTimeout = tc.timeout
			// Nothing listens at port 1, were a pod ready.
			tun.o.Rest = &rest.Config{Host: "https://127.0.0.1:1"}
			a, err := tun.Attach("127.0.0.1:1", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- a.Run(ctx) }()
			err = a.Wait(ctx)
			cancel()
			if rerr := <-done; rerr != nil {
				t.Errorf("Run after its ctx ended = %v", rerr)
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("Wait() = %v, want %q", err, w)
				}
			}
		})
	}
}
