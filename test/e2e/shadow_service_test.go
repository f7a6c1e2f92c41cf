package e2e

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The deployed build's Service: its port, and the port the server listens
// on inside its network namespace.
const (
	deployedSvc        = "deployed-webhook"
	deployedSvcPort    = 8443
	deployedPort       = 9443
	deployedMetricPort = 8080
)

// TestShadowServiceProxy is TestShadowControllerRuntime with the deployed
// build where a team has it: behind a Service, registered by
// clientConfig.service, and given to hookback as --shadow NS/SVC:PORT.
// hookback reaches it through the kube-apiserver's service proxy only
// (https:SVC:PORT, each webhook's path from the manifests). The apiserver
// proxies only to an Endpoints address that is a Pod's IP, and never to
// loopback: the deployed build runs in a network namespace the test makes,
// on its veth address, and a Pod whose status carries that address stands
// for it. The deployed build's own request count shows the proxied calls:
// /mutate-pods is registered in the cluster by hookback's copy only.
func TestShadowServiceProxy(t *testing.T) {
	requireLocal(t, "the apiserver's service proxy reaches the deployed webhook in a network namespace the test makes on this machine")
	requireNetns(t)
	t.Parallel()
	system, ns := namespaceLabelled(t, nil), namespace(t)
	session := sessionFor(t)
	n := newNetns(t)
	deployedCA := startDeployedInNetns(t, n, system)
	mine, _ := startCRUpstream(t, "--deny-prefix", "bad-")
	exposeDeployed(t, system, n.nsIP)
	reg := deployWebhookAt(t, session, admissionregistrationv1.WebhookClientConfig{CABundle: deployedCA,
		Service: &admissionregistrationv1.ServiceReference{Namespace: system, Name: deployedSvc, Path: ptr.To("/validate"), Port: ptr.To[int32](deployedSvcPort)}})
	dir := t.TempDir()
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session,
		"--webhooks", "none", "--controllers", "none", "--webhook-config", userManifests(t, session),
		"--upstream", mine, "--upstream-insecure", "--shadow", fmt.Sprintf("%s/%s:%d", system, deployedSvc, deployedSvcPort),
		"--record-dir", dir)
	p.ready(t)
	shadowPods(t, p, ns, session)
	// Each of hookback's copies asked the deployed build through the proxy:
	// /mutate-pods three times (nothing else calls it), /validate three
	// times besides the apiserver's own three calls.
	eventually(t, "the deployed build's request counts", func(ctx context.Context) (bool, error) {
		m, code := fetch(ctx, fmt.Sprintf("http://%s/metrics", net.JoinHostPort(n.nsIP, itoa(deployedMetricPort))))
		if code != 200 {
			return false, fmt.Errorf("deployed metrics: %d %s", code, m)
		}
		return strings.Contains(m, `controller_runtime_webhook_requests_total{code="200",webhook="/mutate-pods"} 3`) &&
			strings.Contains(m, `controller_runtime_webhook_requests_total{code="200",webhook="/validate"} 6`), nil
	})
	if files, _ := filepath.Glob(filepath.Join(dir, "*_shadow.json")); len(files) != 2 {
		t.Errorf("%d shadow records, want 2 (deny-x, bad-y)", len(files))
	}
	shadowSummary(t, p)
	got, err := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), reg.Name, metav1.GetOptions{})
	if err != nil || got.ResourceVersion != reg.ResourceVersion {
		t.Errorf("the deployed registration changed (%v): hookback must leave it alone", err)
	}
}

// shadowPods creates three pods the deployed build (denies deny-*) and
// yours (denies bad-*) judge: deny-x and bad-y differently, fine-z alike.
// The apiserver follows the deployed build alone, hookback's copies change
// nothing (no patch), and hookback counts and logs the two differences.
func shadowPods(t *testing.T, p *proc, ns, session string) {
	t.Helper()
	ctx := context.Background()
	if _, err := upstreamPod(ctx, ns, "deny-x", session, nil); !apierrors.IsForbidden(err) ||
		!strings.Contains(err.Error(), `"deployed.example.com" denied the request: controller-runtime says no to deny-x`) {
		t.Fatalf("deny-x: err = %v, want the deployed webhook's denial", err)
	}
	for _, name := range []string{"bad-y", "fine-z"} {
		pod, err := upstreamPod(ctx, ns, name, session, nil)
		if err != nil {
			t.Fatalf("%s: %v: only the deployed webhook decides, and it allows", name, err)
		}
		if pod.Labels["cr-seen"] != "" {
			t.Errorf("%s carries cr-seen: hookback's shadow copy patched it", name)
		}
	}
	eventually(t, "the shadow metrics", func(context.Context) (bool, error) {
		m := get(t, "http://"+p.health+"/metrics")
		return strings.Contains(m, `hookback_shadow_reviews_total{result="different",webhook="vpod.example.com"} 2`) &&
			strings.Contains(m, `hookback_shadow_reviews_total{result="identical",webhook="vpod.example.com"} 1`) &&
			strings.Contains(m, `hookback_shadow_reviews_total{result="identical",webhook="mpod.example.com"} 3`), nil
	})
	log := p.stderr.String()
	for _, want := range []string{"name=deny-x differences=\"decision: yours allowed, deployed denied", "name=bad-y differences=\"decision: yours denied, deployed allowed"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// shadowSummary stops hookback and checks its summary of shadowPods.
func shadowSummary(t *testing.T, p *proc) {
	t.Helper()
	p.signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("hookback exited %d", code)
	}
	if !strings.Contains(p.stderr.String(), `msg="shadow summary" webhook=all reviews=6 identical=4 different=2`) {
		t.Errorf("no exit summary:\n%s", p.stderr.String())
	}
}

// TestShadowServiceBadTarget: a --shadow Service that the apiserver could
// not proxy to stops start before anything is registered, with what to do.
func TestShadowServiceBadTarget(t *testing.T) {
	t.Parallel()
	system := namespaceLabelled(t, nil)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: deployedSvc},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(deployedPort)}}}}
	if _, err := env.client.CoreV1().Services(system).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		shadow []string
		// code: 1 when the apiserver says so, 2 for flags wrong by themselves.
		code int
		want string
	}{
		{"no such Service", []string{"--shadow", system + "/no-such-service:8443"}, 1,
			fmt.Sprintf(`--shadow %s/no-such-service:8443: no Service "no-such-service" in namespace %q: name the Service of the deployed webhook`, system, system)},
		{"no such port", []string{"--shadow", system + "/" + deployedSvc + ":8443"}, 1,
			fmt.Sprintf("Service %s/%s has no port 8443 (its ports: 443)", system, deployedSvc)},
		{"--shadow-ca with a Service", []string{"--shadow", system + "/" + deployedSvc, "--shadow-ca", repoPath("go.mod")}, 2,
			"--shadow-ca verifies a --shadow URL; " + system + "/" + deployedSvc + " is reached through the apiserver's service proxy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			session := sessionFor(t)
			args := append(startArgs(t, session, freePort(t), fmt.Sprintf("127.0.0.1:%d", freePort(t))),
				"--webhooks", "none", "--controllers", "none", "--webhook-config", userManifests(t, session),
				"--upstream", "https://127.0.0.1:9", "--upstream-insecure")
			_, errOut, code := hookback(t, env.kubeconfig, append(args, tt.shadow...)...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, want %d and %q:\n%s", code, tt.code, tt.want, errOut)
			}
			if n, err := sessionObjects(context.Background(), session); err != nil || n != 0 {
				t.Errorf("%d objects of the session left (%v)", n, err)
			}
		})
	}
}

// TestShadowServiceNoEndpoints: a Service with nothing behind it is a
// deployed webhook that is down: start goes on (it may come up), and each
// review's difference says what the apiserver's service proxy answered,
// not "N bytes of JSON".
func TestShadowServiceNoEndpoints(t *testing.T) {
	t.Parallel()
	system, ns := namespaceLabelled(t, nil), namespace(t)
	session := sessionFor(t)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: deployedSvc},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(deployedPort)}}}}
	if _, err := env.client.CoreV1().Services(system).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mine, _ := startCRUpstream(t, "--deny-prefix", "bad-")
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session,
		"--webhooks", "none", "--controllers", "none", "--webhook-config", userManifests(t, session),
		"--upstream", mine, "--upstream-insecure", "--shadow", system+"/"+deployedSvc)
	p.ready(t)
	if _, err := upstreamPod(context.Background(), ns, "fine-z", session, nil); err != nil {
		t.Fatalf("fine-z: %v: hookback's copies allow whatever the deployed webhook does", err)
	}
	line := p.whWaitLogLine(t, "shadow: your webhook and the deployed one differ", "name=fine-z", "decision: yours allowed, deployed failed")
	for _, want := range []string{fmt.Sprintf("the apiserver's service proxy to %s/%s:443 answered HTTP 404", system, deployedSvc),
		fmt.Sprintf("is the deployed webhook running? (kubectl get endpointslices -n %s -l kubernetes.io/service-name=%s)", system, deployedSvc)} {
		if !strings.Contains(line, want) {
			t.Errorf("the difference does not say why:\n%s\nwant %s", line, want)
		}
	}
}

// startDeployedInNetns runs the deployed build of controller-runtime's
// server (denies deny-*) inside n, on its veth address, with a certificate
// for the Service's name, and returns that certificate (its own CA).
func startDeployedInNetns(t *testing.T, n *netns, system string) []byte {
	t.Helper()
	certDir := t.TempDir()
	key := newKey(t)
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: deployedSvc}, DNSNames: []string{deployedSvc + "." + system + ".svc"},
		IPAddresses: []net.IP{net.ParseIP(n.nsIP)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	cert := pemBlock("CERTIFICATE", sign(t, tmpl, tmpl, key, key))
	for name, data := range map[string][]byte{"tls.crt": cert, "tls.key": keyPEM(t, key)} {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	srv := n.run(t, env.crBinary, "--host", n.nsIP, "--port", itoa(deployedPort), "--cert-dir", certDir,
		"--metrics-bind-address", net.JoinHostPort(n.nsIP, itoa(deployedMetricPort)))
	eventually(t, "the deployed build to listen in "+n.name, func(ctx context.Context) (bool, error) {
		if srv.exited() {
			t.Fatalf("the deployed build exited:\n%s", tail(srv.log, 20))
		}
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(n.nsIP, itoa(deployedPort)))
		if err != nil {
			return false, nil
		}
		c.Close()
		return true, nil
	})
	return cert
}

// exposeDeployed makes the Service of the deployed build, as a cluster
// with a pod network would have it: no selector, a Pod whose status holds
// ip (the apiserver's service proxy only goes to a Pod's IP), Endpoints for
// the service proxy and an EndpointSlice for the apiserver's webhook calls
// (--enable-aggregator-routing). All are deleted when the test ends.
func exposeDeployed(t *testing.T, system, ip string) {
	t.Helper()
	ctx := context.Background()
	core := env.client.CoreV1()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: deployedSvc},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: deployedSvcPort, TargetPort: intstr.FromInt32(deployedPort)}}}}
	if _, err := core.Services(system).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = core.Services(system).Delete(context.Background(), deployedSvc, metav1.DeleteOptions{}) })
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: deployedSvc},
		// No scheduler picks it up: it stays where the test puts it.
		Spec: corev1.PodSpec{SchedulerName: "hookback-e2e-none", Containers: []corev1.Container{whAppContainer()}}}
	pod, err := core.Pods(system).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = core.Pods(system).Delete(context.Background(), deployedSvc, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	pod.Status.PodIP, pod.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	if pod, err = core.Pods(system).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eps := &corev1.Endpoints{ //nolint:staticcheck // the service proxy reads Endpoints in v1.36
		// Mirrored, it would be a second EndpointSlice the test did not make.
		ObjectMeta: metav1.ObjectMeta{Name: deployedSvc, Labels: map[string]string{discoveryv1.LabelSkipMirror: "true"}},
		Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck
			Addresses: []corev1.EndpointAddress{{IP: ip, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: system, Name: pod.Name, UID: pod.UID}}}, //nolint:staticcheck
			Ports:     []corev1.EndpointPort{{Name: "https", Port: deployedPort}}}},                                                                         //nolint:staticcheck
	}
	if _, err := core.Endpoints(system).Create(ctx, eps, metav1.CreateOptions{}); err != nil { //nolint:staticcheck
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = core.Endpoints(system).Delete(context.Background(), deployedSvc, metav1.DeleteOptions{}) }) //nolint:staticcheck
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: deployedSvc, Labels: map[string]string{
			discoveryv1.LabelServiceName: deployedSvc, discoveryv1.LabelManagedBy: "e2e.hookback.dev"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](deployedPort), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	slices := env.client.DiscoveryV1().EndpointSlices(system)
	if _, err := slices.Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = slices.Delete(context.Background(), deployedSvc, metav1.DeleteOptions{}) })
}

// deployWebhookAt registers, as a team would have deployed it, a
// validating webhook (failurePolicy Fail) for this session's pods, called
// at cc; it is deleted when the test ends.
func deployWebhookAt(t *testing.T, session string, cc admissionregistrationv1.WebhookClientConfig) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "deployed-" + session},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "deployed.example.com",
			ClientConfig: cc,
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"e2e-upstream": session}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	vwcs := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	created, err := vwcs.Create(context.Background(), cfg, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vwcs.Delete(context.Background(), cfg.Name, metav1.DeleteOptions{}) })
	return created
}
