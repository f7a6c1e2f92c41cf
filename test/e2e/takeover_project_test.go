package e2e

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// TestTakeOverProject: a kubebuilder project deployed from its own
// config/default (`make deploy`; kwok runs its manager's pod), then
// `hookback start` in the project's root. Without --take-over the banner
// says the operator is deployed and nothing of it is touched; with
// `--take-over deployment/NAME` its Deployment is at zero replicas, its
// webhook configurations and its CRD's conversion call hookback under
// their own names, and the local manager (`make run`) leads and answers
// through them; a re-deploy meanwhile (`make deploy` again) is said once
// and not fought; after Ctrl-C every object equals its state before, the
// Lease released (holder cleared) so that the deployed manager leads at
// once. Not parallel: it installs and deletes the cluster-scoped Widget
// CRD, which other tests read.
func TestTakeOverProject(t *testing.T) {
	requireLocal(t, "it installs and deletes the cluster-scoped Widget CRD")
	dyn := dynamicClient(t)
	removeTakeOverProject(t, dyn)
	t.Cleanup(func() { removeTakeOverProject(t, dyn) })
	dir, tmp := t.TempDir(), t.TempDir()
	// Not 9443: other runs on this machine may hold it.
	port := freePort(t)
	takeOverProject(t, dir, port)
	deployProject(t, dir)
	before := projectState(t, dyn)
	// TMPDIR: controller-runtime's default cert dir is the test's own.
	environ := append(os.Environ(), "KUBECONFIG="+env.kubeconfig, "TMPDIR="+tmp)
	upstream := "https://127.0.0.1:" + strconv.Itoa(port)
	target := tkNamespace + "/deployment/" + tkDeployment

	// Without the flag: said, and nothing of the operator touched.
	p := startIn(t, dir, env.binary, environ, "--upstream", upstream)
	p.ready(t)
	if want := "deployed: your operator is also deployed as " + target + ": its webhooks are called too and its controllers race yours; add --take-over " + target; !strings.Contains(p.stdout.String(), want) {
		t.Errorf("banner lacks %q:\n%s", want, p.stdout.String())
	}
	if r := projectReplicas(t); r != 1 {
		t.Errorf("without --take-over the deployed operator has %d replicas, want its 1", r)
	}
	p.signal(syscall.SIGINT)
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	sameState(t, "after a start without --take-over", before, projectState(t, dyn))

	p = startIn(t, dir, env.binary, environ, "--upstream", upstream, "--take-over", "deployment/"+tkDeployment)
	p.ready(t)
	for _, want := range []string{"take-over: " + target + " scaled to 0 (from 1; given back at exit)",
		"MutatingWebhookConfiguration " + tkMutating + ": 1 webhook(s) call hookback under its own name",
		"ValidatingWebhookConfiguration " + tkValidating + ": 1 webhook(s) call hookback under its own name",
		"CRD " + widgetCRD + ": conversion calls hookback", "lease:    released " + tkNamespace + "/" + tkLease} {
		if !strings.Contains(p.stdout.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, p.stdout.String())
		}
	}
	projectTakenOver(t, dyn)
	stopManager := makeRun(t, dir, environ)
	eventually(t, "the local manager to lead", func(ctx context.Context) (bool, error) {
		l, err := env.client.CoordinationV1().Leases(tkNamespace).Get(ctx, tkLease, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		h := ptr.Deref(l.Spec.HolderIdentity, "")
		return h != "" && !strings.HasPrefix(h, tkDeployment), nil
	})
	projectServed(t, dyn, p)

	// `make deploy` again, during the session.
	out, err := makeDeploy(t, dir)
	t.Logf("make deploy during the session: %v\n%s", err, out)
	p.whWaitLogLine(t, "Deployment scaled up by someone else", "deployment="+tkNamespace+"/"+tkDeployment)
	redeployed := projectGeneration(t)
	projectServed(t, dyn, p) // the configurations still call hookback

	stopManager()
	p.signal(syscall.SIGINT)
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	// One write since the re-deploy: the give-back's, of hookback's
	// annotation (a Deployment's generation counts its annotations' changes
	// too); a fight would have scaled it again.
	if g := projectGeneration(t); g != redeployed+1 {
		t.Errorf("the re-deployed Deployment's generation went from %d to %d, want one write (the give-back): hookback fought the re-deploy", redeployed, g)
	}
	if n := strings.Count(p.stderr.String(), "Deployment scaled up by someone else"); n != 1 {
		t.Errorf("the re-deploy was said %d times, want once:\n%s", n, p.stderr.String())
	}
	sameState(t, "given back", before, projectState(t, dyn))
	l := projectLease(t)
	if h := ptr.Deref(l.Spec.HolderIdentity, "-"); h != "" {
		t.Errorf("Lease holder %q after the session, want it released (empty) for the deployed manager to lead at once", h)
	}
	p.whWaitLogLine(t, "leader-election Lease given back released", tkNamespace+"/"+tkLease)
}

func projectReplicas(t *testing.T) int32 {
	t.Helper()
	d, err := env.client.AppsV1().Deployments(tkNamespace).Get(context.Background(), tkDeployment, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ptr.Deref(d.Spec.Replicas, 1)
}

func projectGeneration(t *testing.T) int64 {
	t.Helper()
	d, err := env.client.AppsV1().Deployments(tkNamespace).Get(context.Background(), tkDeployment, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Generation
}

// projectTakenOver: no replicas; the operator's configurations, under
// their names, and its CRD's conversion call hookback.
func projectTakenOver(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	if r := projectReplicas(t); r != 0 {
		t.Errorf("the deployed operator has %d replicas during the session, want 0", r)
	}
	for gvr, cfg := range map[string]string{"mutating": tkMutating, "validating": tkValidating} {
		res := dyn.Resource(mutatingGVR)
		if gvr == "validating" {
			res = dyn.Resource(validatingGVR)
		}
		o, err := res.Get(context.Background(), cfg, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		url, _, _ := unstructured.NestedString(hooks[0].(map[string]any), "clientConfig", "url")
		if !strings.Contains(url, "/upstream/svc/"+tkNamespace+"/tkover-webhook-service/443/") {
			t.Errorf("%s calls %q, want hookback", cfg, url)
		}
	}
	stanza, _ := conversionJSON(t, dyn)
	if !strings.Contains(stanza, `"url":"https://`) || !strings.Contains(stanza, "/convert/"+widgetCRD+`/convert"`) {
		t.Errorf("the CRD's conversion %s, want hookback's", stanza)
	}
}

// projectServed: the apiserver calls the local manager through the
// operator's configurations (its defaulter colors a widget blue, its
// validator refuses a size above 10) and its conversion (a v2 read).
func projectServed(t *testing.T, dyn dynamic.Interface, p *proc) {
	t.Helper()
	ctx := context.Background()
	name := "w" + strconv.FormatInt(metav1.Now().UnixNano()%100000, 36)
	w, err := dyn.Resource(widgetsV1).Namespace(tkNamespace).Create(ctx, widget("v1", tkNamespace, name, map[string]any{"size": int64(3)}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create a widget through the taken-over webhooks: %v", err)
	}
	if c, _, _ := unstructured.NestedString(w.Object, "spec", "color"); c != "blue" {
		t.Errorf("widget color %q, want the local defaulter's blue", c)
	}
	v2, err := dyn.Resource(widgetsV2).Namespace(tkNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read the widget in v2 through the taken-over conversion: %v", err)
	}
	if n, _, _ := unstructured.NestedInt64(v2.Object, "spec", "count"); n != 3 {
		t.Errorf("v2 widget count %d, want 3 (converted by the local manager)", n)
	}
	_, err = dyn.Resource(widgetsV1).Namespace(tkNamespace).Create(ctx, widget("v1", tkNamespace, name+"-big", map[string]any{"size": int64(11)}), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "must be at most 10 (crmanager's validator)") {
		t.Errorf("a widget of size 11: %v, want the local validator's denial", err)
	}
	p.whWaitLogLine(t, "msg=admission", "name="+name+" ", "decision=allowed")
}
