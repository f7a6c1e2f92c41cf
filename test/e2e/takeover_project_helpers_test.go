package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"syscall"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/hookback/hookback/internal/syncbuf"
)

// The kubebuilder project of TestTakeOverProject, as its config/default
// names what it deploys.
const (
	tkNamespace  = "tkover-system"
	tkDeployment = "tkover-controller-manager"
	tkMutating   = "tkover-mutating-webhook-configuration"
	tkValidating = "tkover-validating-webhook-configuration"
	// tkLease is the scaffold's LeaderElectionID (cmd/main.go).
	tkLease = "8f1c2a.e2e.hookback.dev"
)

// takeOverProject writes a kubebuilder v4 project around e2e/crmanager in
// dir: PROJECT; a Makefile whose run target starts the manager on port
// with leader election under the scaffold's Lease in the deployed
// namespace (out of the cluster it must be named); and config/ as
// kubebuilder lays it out: crmanager's crd (with the conversion patch)
// and webhook, and the scaffold's manager (Namespace, controller-manager
// Deployment, its image set as `make deploy IMG=...` sets it) and
// namespaced rbac, pulled in by config/default with its namespace and
// name prefix.
func takeOverProject(t *testing.T, dir string, port int) {
	t.Helper()
	if err := os.CopyFS(filepath.Join(dir, "config"), os.DirFS(repoPath("test", "e2e", "crmanager", "config"))); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"PROJECT": "domain: e2e.hookback.dev\nlayout:\n- go.kubebuilder.io/v4\nprojectName: tkover\nrepo: example.com/tkover\nversion: \"3\"\n",
		"Makefile": "run:\n\t" + env.crManager + " --port " + strconv.Itoa(port) +
			" --leader-elect-id " + tkLease + " --leader-elect-namespace " + tkNamespace + "\n",
		"config/default/kustomization.yaml": "namespace: " + tkNamespace + "\nnamePrefix: tkover-\nresources:\n- ../crd\n- ../rbac\n- ../manager\n- ../webhook\n",
		"config/manager/kustomization.yaml": "resources:\n- manager.yaml\nimages:\n- name: controller\n  newName: example.com/tkover\n  newTag: v0.0.1\n",
		"config/manager/manager.yaml": `apiVersion: v1
kind: Namespace
metadata:
  labels:
    control-plane: controller-manager
    app.kubernetes.io/name: tkover
    app.kubernetes.io/managed-by: kustomize
  name: system
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: controller-manager
  namespace: system
  labels:
    control-plane: controller-manager
    app.kubernetes.io/name: tkover
    app.kubernetes.io/managed-by: kustomize
spec:
  selector:
    matchLabels:
      control-plane: controller-manager
      app.kubernetes.io/name: tkover
  replicas: 1
  template:
    metadata:
      annotations:
        kubectl.kubernetes.io/default-container: manager
      labels:
        control-plane: controller-manager
        app.kubernetes.io/name: tkover
    spec:
      securityContext:
        runAsNonRoot: true
        seccompProfile: {type: RuntimeDefault}
      containers:
      - command: [/manager]
        args: [--leader-elect, --health-probe-bind-address=:8081]
        image: controller:latest
        name: manager
        ports:
        - {containerPort: 9443, name: webhook-server, protocol: TCP}
        securityContext:
          allowPrivilegeEscalation: false
          capabilities: {drop: [ALL]}
        livenessProbe:
          httpGet: {path: /healthz, port: 8081}
        readinessProbe:
          httpGet: {path: /readyz, port: 8081}
        resources:
          limits: {cpu: 500m, memory: 128Mi}
          requests: {cpu: 10m, memory: 64Mi}
      serviceAccountName: controller-manager
      terminationGracePeriodSeconds: 10
`,
		"config/rbac/kustomization.yaml": "resources:\n- service_account.yaml\n- leader_election_role.yaml\n- leader_election_role_binding.yaml\n",
		"config/rbac/service_account.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  labels: {app.kubernetes.io/name: tkover, app.kubernetes.io/managed-by: kustomize}\n" +
			"  name: controller-manager\n  namespace: system\n",
		"config/rbac/leader_election_role.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  labels: {app.kubernetes.io/name: tkover, app.kubernetes.io/managed-by: kustomize}
  name: leader-election-role
  namespace: system
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
`,
		"config/rbac/leader_election_role_binding.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  labels: {app.kubernetes.io/name: tkover, app.kubernetes.io/managed-by: kustomize}
  name: leader-election-rolebinding
  namespace: system
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: leader-election-role}
subjects:
- {kind: ServiceAccount, name: controller-manager, namespace: system}
`,
	}
	for name, body := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// makeDeploy is kubebuilder's `make deploy` (kustomize build config/default
// | kubectl apply -f -), with kubectl's own kustomize; it returns kubectl's
// output and error.
func makeDeploy(t *testing.T, dir string) (string, error) {
	t.Helper()
	kubectl, err := ctlKubectlPath()
	if err != nil {
		t.Skip("no kubectl to deploy the project: ", err)
	}
	return kubectlRun(kubectl, "apply", "-k", filepath.Join(dir, "config", "default"))
}

// removeTakeOverProject deletes what the project deploys (its namespace,
// its cluster-scoped webhook configurations and the Widget CRD it
// installed) and waits until the namespace is gone: a run left behind by
// a crash must not be the next run's "before".
func removeTakeOverProject(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	ctx := context.Background()
	for gvr, name := range map[schema.GroupVersionResource]string{mutatingGVR: tkMutating, validatingGVR: tkValidating} {
		if err := dyn.Resource(gvr).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	deleteTestCRD(t, dyn)
	if err := env.client.CoreV1().Namespaces().Delete(ctx, tkNamespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	eventually(t, "namespace "+tkNamespace+" gone", func(ctx context.Context) (bool, error) {
		_, err := env.client.CoreV1().Namespaces().Get(ctx, tkNamespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// projectState is what the take-over touches, as the comparison of before
// and after sees it: without resourceVersion, managedFields and
// generation (which every write moves) and status; the Lease without its
// spec (projectLease judges that).
func projectState(t *testing.T, dyn dynamic.Interface) map[string]any {
	t.Helper()
	out := map[string]any{}
	for key, ri := range map[string]struct {
		ri   dynamic.ResourceInterface
		name string
	}{
		"deployment": {dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(tkNamespace), tkDeployment},
		"mutating":   {dyn.Resource(mutatingGVR), tkMutating},
		"validating": {dyn.Resource(validatingGVR), tkValidating},
		"crd":        {dyn.Resource(crdGVR), widgetCRD},
		"lease":      {dyn.Resource(schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}).Namespace(tkNamespace), tkLease},
	} {
		o, err := ri.ri.Get(context.Background(), ri.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"resourceVersion", "managedFields", "generation"} {
			unstructured.RemoveNestedField(o.Object, "metadata", f)
		}
		unstructured.RemoveNestedField(o.Object, "status")
		if key == "lease" {
			unstructured.RemoveNestedField(o.Object, "spec")
		}
		out[key] = o.Object
	}
	return out
}

func sameState(t *testing.T, what string, before, after map[string]any) {
	t.Helper()
	if !reflect.DeepEqual(after, before) {
		b, _ := json.MarshalIndent(before, "", " ")
		a, _ := json.MarshalIndent(after, "", " ")
		t.Errorf("%s: not as before:\nbefore %s\n after %s", what, b, a)
	}
}

// projectLease is the manager's Lease.
func projectLease(t *testing.T) *coordinationv1.Lease {
	t.Helper()
	l, err := env.client.CoordinationV1().Leases(tkNamespace).Get(context.Background(), tkLease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// deployProject deploys the project as `make deploy` does, waits for its
// manager's pod (kwok runs it), and creates the Lease that pod's leader
// election would hold (kwok's pods run no process): held by POD_UUID, as
// controller-runtime names its identity, renewed now for 15 s.
func deployProject(t *testing.T, dir string) {
	t.Helper()
	if out, err := makeDeploy(t, dir); err != nil {
		t.Fatalf("make deploy: %v\n%s", err, out)
	}
	var pod string
	eventually(t, "the deployed manager's pod running", func(ctx context.Context) (bool, error) {
		list, err := env.client.CoreV1().Pods(tkNamespace).List(ctx, metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
		if err != nil || len(list.Items) != 1 {
			return false, err
		}
		pod = list.Items[0].Name
		return list.Items[0].Status.Phase == corev1.PodRunning, nil
	})
	now := metav1.NowMicro()
	_, err := env.client.CoordinationV1().Leases(tkNamespace).Create(context.Background(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: tkLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(pod + "_7c1d2e3f-1111-2222-3333-444455556666"), LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To[int32](0)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// makeRun starts the project's manager as a developer does (`make run`)
// with environ; it is stopped (SIGTERM to make and its child) by the
// returned function, and at the end of the test.
func makeRun(t *testing.T, dir string, environ []string) func() {
	t.Helper()
	cmd := exec.Command("make", "run")
	cmd.Dir, cmd.Env = dir, environ
	var log syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // make's child too
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("make run:\n%s", log.String())
		}
	}
	t.Cleanup(stop)
	return stop
}
