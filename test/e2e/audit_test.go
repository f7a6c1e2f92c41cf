package e2e

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// auditRow is one row of `hookback audit -o json`.
type auditRow struct {
	Webhook, Resource, Namespace, Name, Operation, Result, Message string
	Patch                                                          []map[string]any
}

// TestAuditControllerRuntime: pods created before hookback runs, audited
// through controller-runtime's webhook server (a third-party server, not
// one written for the test) with the user's manifests: the denial, the
// patches and the allowed pod come from it, the exit code follows the
// denial, JUnit counts it, and nothing is written to the cluster.
func TestAuditControllerRuntime(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	session := sessionFor(t)
	ctx := context.Background()
	for _, name := range []string{"deny-old", "allow-old"} {
		if _, err := upstreamPod(ctx, ns, name, session, nil); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	upstream, _ := startCRUpstream(t)
	args := []string{"audit", "--session", session, "--webhooks", "none", "--webhook-config", userManifests(t, session),
		"--upstream", upstream, "--upstream-insecure"}

	out, errOut, code := hookback(t, env.kubeconfig, append(args, "-o", "json")...)
	if code != 1 {
		t.Fatalf("audit exited %d, want 1 (a denial)\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var rows []auditRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("audit -o json: %v\n%s", err, out)
	}
	// stderr is a pipe, not a terminal: no progress line, the summary alone.
	if strings.Contains(errOut, "audited ") || strings.Contains(errOut, "\r") {
		t.Errorf("audit drew its progress on a pipe:\n%q", errOut)
	}
	got := map[string]auditRow{}
	for _, r := range rows {
		got[r.Webhook+" "+r.Namespace+"/"+r.Name] = r
	}
	want := map[string]string{
		"vpod.example.com " + ns + "/deny-old":  "denied",
		"vpod.example.com " + ns + "/allow-old": "allowed",
		"mpod.example.com " + ns + "/deny-old":  "patched",
		"mpod.example.com " + ns + "/allow-old": "patched",
	}
	if len(got) != len(want) {
		t.Fatalf("rows %+v, want %v", rows, want)
	}
	for k, res := range want {
		r := got[k]
		if r.Result != res || r.Operation != "CREATE" || r.Resource != "pods" {
			t.Errorf("%s: %+v, want %s on a CREATE of pods", k, r, res)
		}
	}
	if m := got["vpod.example.com "+ns+"/deny-old"].Message; m != "controller-runtime says no to deny-old" {
		t.Errorf("denial message %q, want controller-runtime's", m)
	}
	if p := got["mpod.example.com "+ns+"/allow-old"].Patch; len(p) != 1 || p[0]["path"] != "/metadata/labels/cr-seen" {
		t.Errorf("patch %v, want controller-runtime's cr-seen label", p)
	}

	out, _, code = hookback(t, env.kubeconfig, append(args, "-o", "junit")...)
	var junit struct {
		Suites []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(out), &junit); err != nil || code != 1 {
		t.Fatalf("audit -o junit exited %d: %v\n%s", code, err, out)
	}
	failures := map[string]int{}
	for _, s := range junit.Suites {
		failures[s.Name] = s.Failures
	}
	if failures["vpod.example.com"] != 1 || failures["mpod.example.com"] != 0 {
		t.Errorf("junit failures %v, want one for vpod.example.com", failures)
	}
	if _, _, code = hookback(t, env.kubeconfig, append(args, "--fail-on", "patched", "--operation", "UPDATE")...); code != 0 {
		// Neither webhook's rules include UPDATE: nothing is sent.
		t.Errorf("audit --operation UPDATE exited %d, want 0 (no webhook takes UPDATE)", code)
	}

	pods, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Labels["cr-seen"] != "" {
			t.Errorf("pod %s was patched in the cluster: audit must write nothing", p.Name)
		}
	}
	if n, err := sessionObjects(ctx, session); err != nil || n != 0 {
		t.Errorf("audit left %d objects of its session (%v): it must register nothing", n, err)
	}
}

// TestAuditUnreachableUpstream: an upstream nothing listens on stops the
// audit with exit 2, naming it, before anything is listed.
func TestAuditUnreachableUpstream(t *testing.T) {
	t.Parallel()
	session := sessionFor(t)
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	out, errOut, code := hookback(t, env.kubeconfig, "audit", "--session", session, "--webhooks", "none",
		"--webhook-config", userManifests(t, session), "--upstream", "http://"+addr)
	if code != 2 || !strings.Contains(errOut, addr) {
		t.Fatalf("audit exited %d, want 2 naming %s\nstdout:\n%s\nstderr:\n%s", code, addr, out, errOut)
	}
}
