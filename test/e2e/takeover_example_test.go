package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// exampleOperator is the operator `start --take-over`'s help example takes
// over, deployed as `make deploy` leaves a kubebuilder project named
// my-operator (kwok runs its pod): the manager's Deployment, the webhook
// Service selecting its pods and a validating webhook configuration
// calling it. Removed at the end of the test, and before (a run a crash
// left behind).
const exampleOperator = `apiVersion: v1
kind: Namespace
metadata: {name: my-operator-system}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: my-operator-controller-manager, namespace: my-operator-system, labels: {control-plane: controller-manager}}
spec:
  replicas: 1
  selector: {matchLabels: {control-plane: controller-manager}}
  template:
    metadata: {labels: {control-plane: controller-manager}}
    spec:
      containers: [{name: manager, image: example.com/my-operator:v0.0.1}]
      terminationGracePeriodSeconds: 0
---
apiVersion: v1
kind: Service
metadata: {name: my-operator-webhook-service, namespace: my-operator-system}
spec:
  selector: {control-plane: controller-manager}
  ports: [{port: 443, targetPort: 9443}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: my-operator-validating-webhook-configuration}
webhooks:
- name: vgadget-v1.my-operator.example.com
  clientConfig:
    service: {namespace: my-operator-system, name: my-operator-webhook-service, path: /validate-example-com-v1-gadget}
  rules: [{apiGroups: [example.com], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [gadgets]}]
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
`

// deployExampleOperator deploys exampleOperator with kubectl and waits for
// its pod; the returned check says whether the example gave it back (its
// replica and its webhook's Service).
func deployExampleOperator(t *testing.T) (givenBack func(t *testing.T)) {
	t.Helper()
	kubectl, err := ctlKubectlPath()
	if err != nil {
		t.Skip("no kubectl to deploy the example's operator: ", err)
	}
	remove := func() {
		ctx := context.Background()
		_ = env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, "my-operator-validating-webhook-configuration", metav1.DeleteOptions{})
		_ = env.client.CoreV1().Namespaces().Delete(ctx, "my-operator-system", metav1.DeleteOptions{})
		eventually(t, "namespace my-operator-system gone", func(ctx context.Context) (bool, error) {
			_, err := env.client.CoreV1().Namespaces().Get(ctx, "my-operator-system", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}
	remove()
	t.Cleanup(remove)
	cmd := exec.Command(kubectl, "--kubeconfig", env.kubeconfig, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(exampleOperator)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	eventually(t, "the example operator's pod", func(ctx context.Context) (bool, error) {
		list, err := env.client.CoreV1().Pods("my-operator-system").List(ctx, metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
		return err == nil && len(list.Items) == 1, err
	})
	return func(t *testing.T) {
		ctx := context.Background()
		d, err := env.client.AppsV1().Deployments("my-operator-system").Get(ctx, "my-operator-controller-manager", metav1.GetOptions{})
		if err != nil || d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
			t.Errorf("the example's operator after the example: %v, %v; want its 1 replica back", d.Spec.Replicas, err)
		}
		v, err := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "my-operator-validating-webhook-configuration", metav1.GetOptions{})
		if err != nil || v.Webhooks[0].ClientConfig.Service == nil || v.Webhooks[0].ClientConfig.URL != nil {
			t.Errorf("the example's webhook configuration after the example: %v; want it calling its Service again", err)
		}
	}
}
