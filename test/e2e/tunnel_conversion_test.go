package e2e

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/tunnel"
)

// TestTunnelConversion: `hookback start --tunnel` with a CRD conversion
// webhook. hookback and the controller-runtime manager (e2e/crmanager) run
// in a test-made network namespace the apiserver cannot reach, as on a
// laptop behind NAT; the CRD's conversion points at the relay's Service
// while the session runs, so an object created in v1 reads back in v2
// through relay, tunnel, hookback and manager; at exit the CRD gets the
// manifests' stanza back. The relay pod is stood in for as in
// TestTunnelStart.
func TestTunnelConversion(t *testing.T) {
	requireLocal(t, "it deletes and installs a cluster-scoped CRD of its own")
	lab := newTunnelLab(t)
	n := lab.n
	dyn := dynamicClient(t)
	deleteTestCRD(t, dyn)
	work := namespace(t)

	// The manager on the namespace's loopback, as `make run` on a laptop.
	certDir := crManagerCert(t)
	const mgrPort = "9444"
	n.run(t, "/usr/bin/env", "KUBECONFIG="+lab.kubeconfig, env.crManager, "--port", mgrPort, "--cert-dir", certDir)
	health := "http://" + net.JoinHostPort(n.nsIP, "8081")
	hb := n.run(t, env.binary, "start", "--kubeconfig", lab.kubeconfig, "--session", lab.session, "--state-dir", t.TempDir(),
		"--port", "7443", "--health-address", net.JoinHostPort(n.nsIP, "8081"), "--inspector-address", "",
		"--webhooks", "none", "--controllers", "none", "--verify-timeout", "30s",
		"--webhook-config", crManifests(t), "--upstream", "https://127.0.0.1:"+mgrPort, "--upstream-ca", filepath.Join(certDir, "tls.crt"),
		"--tunnel", "--tunnel-namespace", lab.ns, "--relay-image", "registry.invalid/hookback:e2e")
	pod, secret := lab.relayPod(t, hb)
	lab.relayProcess(t, secret)
	forwardRelayPod(t, lab.ns, pod.Name, n.nsIP, tunnel.DefaultControlPort)
	waitLog(t, hb, "hookback is ready", "the session ready")
	if line := logLine(readFile(t, hb.log), "hookback is ready"); !strings.Contains(line, "verified: the apiserver called back") {
		t.Fatalf("not verified through the tunnel: %s", line)
	}

	// The conversion calls the relay's Service, with hookback's path.
	stanza, crd := conversionJSON(t, dyn)
	svc, _, _ := unstructured.NestedMap(crd.Object, "spec", "conversion", "webhook", "clientConfig", "service")
	if svc["namespace"] != lab.ns || svc["name"] != lab.relay || svc["path"] != registration.ConversionPath(widgetCRD, "/convert") || svc["port"] != int64(443) {
		t.Fatalf("conversion %s: want the relay's Service %s/%s:443 with hookback's path", stanza, lab.ns, lab.relay)
	}
	if url, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "url"); url != "" {
		t.Fatalf("conversion %s: a url as well as the Service", stanza)
	}

	// Created in v1 (the manager's defaulter and validator called through
	// the tunnel too), read in v2 through the conversion webhook.
	eventually(t, "a widget created in v1 and read in v2 through the tunnel", func(ctx context.Context) (bool, error) {
		w := widget("v1", work, "through-tunnel", map[string]any{"size": int64(4)})
		if _, err := dyn.Resource(widgetsV1).Namespace(work).Create(ctx, w, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
			return false, nil
		}
		v2, err := dyn.Resource(widgetsV2).Namespace(work).Get(ctx, "through-tunnel", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		c, _, _ := unstructured.NestedInt64(v2.Object, "spec", "count")
		return c == 4 && v2.GetAPIVersion() == "e2e.hookback.dev/v2", nil
	})
	converted := `hookback_conversion_objects_total{crd="` + widgetCRD + `"}`
	if v := metricAt(health, converted); v < 1 {
		t.Errorf("%s = %v: the conversion did not go through hookback", converted, v)
	}
	if v := metricAt(health, "hookback_tunnel_streams_total "); v < 1 {
		t.Errorf("hookback_tunnel_streams_total = %v, want at least 1", v)
	}

	// At exit the manifests' stanza is back (port defaulted by the
	// apiserver), and the relay is gone.
	hb.stop(t, syscall.SIGTERM)
	want := manifestStanza()
	want["webhook"].(map[string]any)["clientConfig"].(map[string]any)["service"].(map[string]any)["port"] = float64(443)
	got, _ := conversionJSON(t, dyn)
	var restored any
	if err := json.Unmarshal([]byte(got), &restored); err != nil || !reflect.DeepEqual(restored, want) {
		t.Errorf("conversion after exit %s, want the manifests' %v", got, want)
	}
	checkRelayGone(t, lab.ns, lab.relay)
}
