package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// enforcePolicy is a params policy written for this test: a ConfigMap may
// not hold the key its param names. Its binding matches every namespace:
// only start's scope narrows it.
const enforcePolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: NAME}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
  - expression: "!has(object.data) || !(params.data.key in object.data)"
    messageExpression: "'key ' + params.data.key + ' is forbidden'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: NAME}
spec:
  policyName: NAME
  validationActions: [Deny]
  paramRef: {name: forbidden-key, namespace: PARAMNS, parameterNotFoundAction: Deny}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: forbidden-key, namespace: PARAMNS}
data: {key: launch-codes}
`

// writeEnforcePolicy writes the policy named name, its param in paramNS.
func writeEnforcePolicy(t *testing.T, name, paramNS string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	text := strings.NewReplacer("NAME", name, "PARAMNS", paramNS).Replace(enforcePolicy)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// dryRunForbidden creates, dry-run, a ConfigMap holding the forbidden key
// and returns the apiserver's error (nil: admitted).
func dryRunForbidden(ctx context.Context, ns string) error {
	_, err := env.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Data: map[string]string{"launch-codes": "0000"},
	}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// enforcedObjects names the session's policies, bindings and params.
func enforcedObjects(ctx context.Context, session, paramNS string) ([]string, error) {
	sel := metav1.ListOptions{LabelSelector: managedBy + ",hookback.dev/session=" + session}
	a := env.client.AdmissionregistrationV1()
	var out []string
	ps, err := a.ValidatingAdmissionPolicies().List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, p := range ps.Items {
		out = append(out, "policy/"+p.Name)
	}
	bs, err := a.ValidatingAdmissionPolicyBindings().List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, b := range bs.Items {
		out = append(out, "binding/"+b.Name)
	}
	cms, err := env.client.CoreV1().ConfigMaps(paramNS).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, c := range cms.Items {
		out = append(out, "param/"+c.Name)
	}
	return out, nil
}

// waitEnforced waits until the apiserver denies the forbidden key in ns
// with the policy's message: the policy, its binding and its param are
// in force (the apiserver loads policies asynchronously).
func waitEnforced(t *testing.T, ns, policy string) {
	t.Helper()
	waitDenied(t, ns, policy, "key launch-codes is forbidden")
}

// waitDenied waits until the apiserver denies the forbidden key in ns
// through policy's binding with a message containing want.
func waitDenied(t *testing.T, ns, policy, want string) {
	t.Helper()
	seen := ""
	eventually(t, "the apiserver to enforce "+policy+" in "+ns, func(ctx context.Context) (bool, error) {
		err := dryRunForbidden(ctx, ns)
		if err == nil {
			err = fmt.Errorf("admitted")
		}
		if ctx.Err() == nil && err.Error() != seen {
			seen = err.Error()
			t.Logf("dry-run create in %s: %s", ns, seen)
		}
		msg := err.Error()
		if !apierrors.IsInvalid(err) || !strings.Contains(msg, want) || !strings.Contains(msg, "with binding '"+policy+"' denied request") {
			return false, err
		}
		return true, nil
	})
}

func TestPolicyEnforce(t *testing.T) {
	ctx := context.Background()
	in, out := namespaceLabelled(t, nil), namespaceLabelled(t, nil)
	name := "e2e-enforce-" + strings.TrimPrefix(in, "e2e-")
	file := writeEnforcePolicy(t, name, in)
	// The user's own policy of the same name (not bound): hookback must
	// neither take it over nor delete it.
	theirs, err := env.client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "true"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(context.Background(), theirs.Name, metav1.DeleteOptions{})
	})

	p := startMark(t, "--namespace", in, "--policy", file, "--policy-enforce")
	p.ready(t)
	copyName := name + "-" + p.session
	got, err := enforcedObjects(ctx, p.session, in)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"policy/" + copyName, "binding/" + copyName, "param/forbidden-key-" + p.session}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("enforced objects %v, want %v", got, want)
	}

	t.Run("the apiserver denies in scope and admits out of scope", func(t *testing.T) {
		waitEnforced(t, in, copyName)
		if err := dryRunForbidden(ctx, out); err != nil {
			t.Fatalf("out of scope (%s): %v", out, err)
		}
		// In force at the same time: the admission above was the scope's
		// doing, not a policy the apiserver had not loaded.
		waitEnforced(t, in, copyName)
	})

	t.Run("removed at exit, the user's policy kept", func(t *testing.T) {
		p.signal(syscall.SIGTERM)
		if code := p.wait(t); code != 0 {
			t.Fatalf("exit %d", code)
		}
		if got, err := enforcedObjects(ctx, p.session, in); err != nil || len(got) != 0 {
			t.Fatalf("left after exit: %v (err %v)", got, err)
		}
		eventually(t, "the apiserver to stop enforcing", func(ctx context.Context) (bool, error) {
			return dryRunForbidden(ctx, in) == nil, nil
		})
		if _, err := env.client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, theirs.Name, metav1.GetOptions{}); err != nil {
			t.Fatalf("the user's policy %s: %v", theirs.Name, err)
		}
	})

	t.Run("removed by the next start after a kill -9", func(t *testing.T) {
		crashed := startMark(t, "--namespace", in, "--policy", file, "--policy-enforce", "--lease-duration", "2s")
		crashed.ready(t)
		// Its param is found although the first session's exit removed
		// the only other ConfigMap-param binding: the run's param keeper
		// (paramkeeper_test.go) holds the apiserver's informer open.
		waitEnforced(t, in, name+"-"+crashed.session)
		crashed.signal(syscall.SIGKILL)
		crashed.wait(t)
		if got, _ := enforcedObjects(ctx, crashed.session, in); len(got) != 3 {
			t.Fatalf("kill -9 left %v: the test proves nothing", got)
		}
		eventually(t, "the crashed session's Lease to expire", func(ctx context.Context) (bool, error) {
			l, err := env.client.CoordinationV1().Leases("default").Get(ctx, "hookback-"+crashed.session, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			if err != nil {
				return false, err
			}
			return l.Spec.RenewTime.Add(2 * time.Second).Before(time.Now()), nil
		})
		next := startMark(t)
		next.ready(t)
		if got, err := enforcedObjects(ctx, crashed.session, in); err != nil || len(got) != 0 {
			t.Fatalf("the next start left %v of the crashed session (err %v)", got, err)
		}
		if _, err := env.client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, theirs.Name, metav1.GetOptions{}); err != nil {
			t.Fatalf("the user's policy %s: %v", theirs.Name, err)
		}
	})
}

func TestPolicyEnforceCleanupCommand(t *testing.T) {
	ctx := context.Background()
	in := namespaceLabelled(t, nil)
	p := startMark(t, "--namespace", in, "--policy", writeEnforcePolicy(t, "e2e-cleanup-"+strings.TrimPrefix(in, "e2e-"), in), "--policy-enforce")
	p.ready(t)
	p.signal(syscall.SIGKILL)
	p.wait(t)
	if got, _ := enforcedObjects(ctx, p.session, in); len(got) != 3 {
		t.Fatalf("kill -9 left %v: the test proves nothing", got)
	}
	stdout, stderr, code := hookback(t, env.kubeconfig, "cleanup", "--session", p.session)
	if code != 0 || !strings.Contains(stdout, p.session) {
		t.Fatalf("cleanup exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if got, err := enforcedObjects(ctx, p.session, in); err != nil || len(got) != 0 {
		t.Fatalf("left after cleanup: %v (err %v)", got, err)
	}
}
