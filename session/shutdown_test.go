package session

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hookback/hookback/builtin/controllers"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/internal/lifecycle"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/tunnel"
)

// redirectedCRD is a CRD whose conversion the session "unit" pointed at
// hookback, saving that it had none.
func redirectedCRD() *unstructured.Unstructured {
	name := "widgets.example.com"
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": name, "resourceVersion": "7",
			"labels":      map[string]any{registration.LabelManagedBy: registration.ManagedByValue, registration.LabelSession: "unit"},
			"annotations": map[string]any{registration.AnnotationConversion: "null", registration.AnnotationLease: "default/hookback-unit"}},
		"spec": map[string]any{"conversion": map[string]any{"strategy": "Webhook", "webhook": map[string]any{
			"clientConfig": map[string]any{"url": "https://127.0.0.1:1" + registration.ConvertPathPrefix + name + "/v1"}}}},
	}}
	return u
}

// serves tells whether a server accepts connections at addr.
func serves(addr net.Addr) bool {
	c, err := net.Dial("tcp", addr.String())
	if err == nil {
		_ = c.Close()
	}
	return err == nil
}

// probingController journals whether the webhook server still serves when
// it is stopped.
type probingController struct {
	j    *journal
	addr net.Addr
}

func (c probingController) Name() string { return "probing" }
func (c probingController) Run(ctx context.Context, _ int) error {
	c.j.add("controller started")
	<-ctx.Done()
	c.j.add(fmt.Sprintf("serving=%v at controller stop", serves(c.addr)))
	return nil
}

var _ controllers.Controller = probingController{}

// servingAt journals, at each delete, whether the webhook server still
// accepts connections then.
func servingAt(j *journal, cs *fake.Clientset, dyn *dynamicfake.FakeDynamicClient, addr net.Addr) {
	record := func(a k8stesting.Action) (bool, runtime.Object, error) {
		j.add(fmt.Sprintf("serving=%v at delete %s", serves(addr), a.(k8stesting.DeleteAction).GetName()))
		return false, nil, nil
	}
	cs.PrependReactor("delete", "*", record)
	dyn.PrependReactor("delete", "*", record)
}

// TestShutdownInOrder: shutdown undoes a run that took the Lease, started
// its controllers, registered and deployed a relay in this order: restore
// the CRDs, deregister while still serving, stop the controllers, stop
// serving, remove the relay, clean up shared objects, release the Lease.
// Removing or reordering any of these fails the test.
func TestShutdownInOrder(t *testing.T) {
	r, j, cs := newTestRun(t, testTemplate)
	dyn := r.cluster.Dynamic.(*dynamicfake.FakeDynamicClient)
	addDynamic(t, dyn, registration.CRDResource, redirectedCRD())
	addDynamic(t, dyn, schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		tunnel.Manifests(tunnel.Spec{Name: tunnel.RelayName("unit"), Namespace: "tun", Session: "unit"}).Deployment)
	r.cfg.Webhooks = []string{webhooks.NameNodeStatus} // a part with a shared cleanup
	r.parts.controllers = []controllers.Controller{probingController{j, r.server.Addr()}}
	r.errs = lifecycle.NewErrors()
	r.serving = lifecycle.NewGroup(context.Background(), r.errs)
	r.working = r.serving.Child()
	r.serving.GoUntilStopped("the webhook server", r.server.Start)
	for _, s := range r.steps(time.Now()) {
		if !slices.Contains([]string{"lease", "controllers", "register"}, s.name) {
			continue
		}
		if err := s.do(context.Background()); err != nil {
			t.Fatalf("step %s: %v", s.name, err)
		}
	}
	// What register and startTunnel would have set, had they redirected
	// a CRD and deployed a relay.
	r.conversions = &conversions{crds: []registration.CRD{{Name: "widgets.example.com"}}}
	r.tunnel = newTestTunnel(t, tunnel.Clients{Client: r.cluster.Client, Dynamic: r.cluster.Dynamic}, "unit", "tun")
	waitFor(t, "the controller to start", func() bool { return j.index("controller started") >= 0 })
	servingAt(j, cs, dyn, r.server.Addr())

	r.shutdown()

	order := []string{
		"patch widgets.example.com",
		"serving=true at delete test-unit", "delete test-unit",
		"serving=true at controller stop",
		"serving=false at delete " + tunnel.RelayName("unit"),
		"list nodes",
		"serving=false at delete hookback-unit", "delete lease",
	}
	last := -1
	for _, want := range order {
		i := slices.Index(j.all(), want)
		if i < 0 || i < last {
			t.Fatalf("%q missing or out of order in\n%s", want, strings.Join(j.all(), "\n"))
		}
		last = i
	}
	if err := r.errs.Err(); err != nil {
		t.Errorf("a part failed: %v", err)
	}
}
