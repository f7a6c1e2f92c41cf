package tunnel

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
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
			want: []string{"relay image img cannot be pulled", "ImagePullBackOff", "pass tunnel.Config.Image"}},
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

// TestAttachmentLifecycle: Wait returns once the session's relay takes
// the attach, and every later attach (another relay pod) calls
// onReattach; a relay that refuses the secret stops Run with ErrDenied and
// Wait with why. Run ends when its ctx does.
func TestAttachmentLifecycle(t *testing.T) {
	for _, tc := range []struct {
		name, secret string
		waitErr      string // "": attached
	}{
		{name: "attached, then attached again to another relay pod", secret: "s3cret"},
		{name: "refused by a relay with another secret", secret: "other", waitErr: "stopped before it attached"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := echo(t)
			var control relayAddr
			r, stop := startRelay(t, "127.0.0.1:0")
			control.set(r.ControlAddr().String())
			tun := testSession(t, fakeClients(), "s", "tun")
			tun.spec.Secret = tc.secret
			tun.dialer = DialerFunc(func(ctx context.Context) (net.Conn, error) {
				addr := control.get()
				if addr == "" {
					return nil, errNoRelay
				}
				var d net.Dialer
				return d.DialContext(ctx, "tcp", addr)
			})
			var reattached atomic.Int32
			a, err := tun.Attach(srv.Listener.Addr().String(), nil, func() { reattached.Add(1) })
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- a.Run(ctx) }()
			err = a.Wait(ctx)
			if tc.waitErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.waitErr) {
					t.Fatalf("Wait() = %v, want %q", err, tc.waitErr)
				}
				if rerr := <-done; !errors.Is(rerr, ErrDenied) || !strings.HasPrefix(rerr.Error(), "reverse tunnel: ") {
					t.Fatalf("Run() = %v, want the reverse tunnel denied", rerr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Wait() = %v, want attached", err)
			}
			if n := reattached.Load(); n != 0 {
				t.Fatalf("onReattach called %d times on the first attach", n)
			}
			control.set("")
			stop()
			r2, _ := startRelay(t, "127.0.0.1:0")
			control.set(r2.ControlAddr().String())
			waitFor(t, "the attach to the second relay", func() bool { return reattached.Load() == 1 })
			cancel()
			if rerr := <-done; rerr != nil {
				t.Errorf("Run after its ctx ended = %v", rerr)
			}
		})
	}
}

// TestEnsureNamespace: a missing tunnel namespace is created, marked as a
// tunnel session's; without the right to create namespaces an existing one
// is used, and a missing one is an error that says what to do.
func TestEnsureNamespace(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		existing  []runtime.Object
		forbidden bool
		want      string // what the error says; "": none
		marked    bool
	}{
		{name: "created, marked", marked: true},
		{name: "an existing one is left as it is", existing: []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tun"}}}},
		{name: "may not create, exists", existing: []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tun"}}}, forbidden: true},
		{name: "may not create, missing", forbidden: true,
			want: `tunnel namespace "tun" does not exist and you may not create it: ask for it to be created, or pass tunnel.Config.Namespace`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeClients(tc.existing...)
			if tc.forbidden {
				c.Client.(*fake.Clientset).PrependReactor("create", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "tun", nil)
				})
			}
			err := testSession(t, c, "s", "tun").ensureNamespace(ctx)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("ensureNamespace() = %v, want %q", err, tc.want)
			}
			if tc.want != "" {
				return
			}
			ns, err := c.Client.CoreV1().Namespaces().Get(ctx, "tun", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := ns.Labels[labelTunnelNamespace] == "true"; got != tc.marked {
				t.Errorf("namespace marked as a tunnel session's: %v, want %v", got, tc.marked)
			}
		})
	}
}
