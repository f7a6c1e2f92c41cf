package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hookback/hookback/builtin/controllers"
)

// Tests of the exec-rbac controller. It owns one cluster-wide object, the
// ClusterRole, so these tests must not run in parallel with another test
// that enables it; none of them calls t.Parallel.

// ctlDeleteExecRBAC deletes exec-rbac's ClusterRole, its RoleBindings in
// every namespace and a ClusterRoleBinding of an older version, and waits
// until they are gone, so that each run starts from nothing.
func ctlDeleteExecRBAC(t *testing.T) {
	t.Helper()
	rbac := env.client.RbacV1()
	name := controllers.ExecRBACObjectName
	eventually(t, "ClusterRole, RoleBindings and ClusterRoleBinding "+name+" to be deleted", func(ctx context.Context) (bool, error) {
		list, err := rbac.RoleBindings("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
		if err != nil {
			return false, err
		}
		errs := []error{
			rbac.ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{}),
			rbac.ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{}),
		}
		for _, rb := range list.Items {
			errs = append(errs, rbac.RoleBindings(rb.Namespace).Delete(ctx, name, metav1.DeleteOptions{}))
		}
		for _, err := range errs {
			if err != nil && !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		return apierrors.IsNotFound(errs[0]) && apierrors.IsNotFound(errs[1]) && len(list.Items) == 0, nil
	})
}

// ctlWaitBinding waits until the RoleBinding of ns has exactly the
// ServiceAccount subjects want ("namespace/name"), or, with want nil, until
// there is none, and returns it.
func ctlWaitBinding(t *testing.T, ns string, want []string) *rbacv1.RoleBinding {
	t.Helper()
	what := fmt.Sprintf("RoleBinding %s/%s with subjects %v", ns, controllers.ExecRBACObjectName, want)
	if want == nil {
		what = fmt.Sprintf("no RoleBinding %s/%s", ns, controllers.ExecRBACObjectName)
	}
	var rb *rbacv1.RoleBinding
	eventually(t, what, func(ctx context.Context) (bool, error) {
		var err error
		rb, err = env.client.RbacV1().RoleBindings(ns).Get(ctx, controllers.ExecRBACObjectName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return want == nil, nil
		}
		if err != nil {
			return false, err
		}
		var got []string
		for _, s := range rb.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind {
				got = append(got, s.Namespace+"/"+s.Name)
			}
		}
		if !slices.Equal(got, want) {
			return false, fmt.Errorf("subjects %v", got)
		}
		return true, nil
	})
	return rb
}

func ctlManagedBy(labels map[string]string) bool {
	return labels["app.kubernetes.io/managed-by"] == "hookback"
}

var ctlKubectlPath = sync.OnceValues(func() (string, error) {
	if !env.local {
		return exec.LookPath("kubectl")
	}
	// hack/cluster's pinned build; lib.sh is where its cache path is decided.
	out, err := exec.Command("bash", "-c", `source "$1" && printf %s "$BIN_DIR"`, "bash",
		repoPath("hack", "cluster", "lib.sh")).Output()
	if err != nil {
		return "", fmt.Errorf("find hack/cluster's kubectl: %w", err)
	}
	return filepath.Join(string(out), "kubectl"), nil
})

// ctlCanExec runs `kubectl auth can-i create pods --subresource=exec
// --as=system:serviceaccount:<saNS>:<sa> -n <ns>`: what `kubectl exec` run as
// the agent's service account would be allowed to do.
func ctlCanExec(ctx context.Context, saNS, sa, ns string) (bool, error) {
	kubectl, err := ctlKubectlPath()
	if err != nil {
		return false, err
	}
	cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", env.kubeconfig, "auth", "can-i", "create", "pods",
		"--subresource=exec", "--as=system:serviceaccount:"+saNS+":"+sa, "-n", ns)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	// can-i answers on stdout and exits 1 for "no".
	answer := strings.TrimSpace(stdout.String())
	var exitErr *exec.ExitError
	switch {
	case err == nil && answer == "yes":
		return true, nil
	case errors.As(err, &exitErr) && exitErr.ExitCode() == 1 && strings.HasPrefix(answer, "no"):
		return false, nil
	default:
		return false, fmt.Errorf("kubectl auth can-i: %v: %q %q", err, answer, stderr.String())
	}
}

// ctlWaitCanExec waits until the service account saNS/sa may exec into the
// pods of ns (want true) or may not (want false). The apiserver's RBAC
// authorizer follows bindings through a watch, hence the wait.
func ctlWaitCanExec(t *testing.T, saNS, sa, ns string, want bool) {
	t.Helper()
	what := fmt.Sprintf("`kubectl auth can-i create pods --subresource=exec --as=system:serviceaccount:%s:%s -n %s` to say %s",
		saNS, sa, ns, map[bool]string{true: "yes", false: "no"}[want])
	eventually(t, what, func(ctx context.Context) (bool, error) {
		got, err := ctlCanExec(ctx, saNS, sa, ns)
		return err == nil && got == want, err
	})
}

func TestControllerExecRBAC(t *testing.T) {
	requireLocal(t, whyKwokRuns)
	ctx := context.Background()
	rbac := env.client.RbacV1()
	name := controllers.ExecRBACObjectName
	// Registered before start, so it runs after hookback stopped: a later
	// test (or run) starts without the objects.
	ctlDeleteExecRBAC(t)
	t.Cleanup(func() { ctlDeleteExecRBAC(t) })

	custom, byDefault, disabled, foreign := namespace(t), namespace(t), namespace(t), namespace(t)
	if _, err := env.client.CoreV1().ServiceAccounts(custom).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// What an older hookback left: a ClusterRoleBinding letting a service
	// account exec anywhere. Deleted at start, or the "no" in another
	// namespace below would be a "yes".
	if _, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "hookback"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: byDefault, Name: "default"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Exists before hookback starts, so it is in the informer's initial
	// list, ahead of every pod created below.
	ctlBarePod(t, disabled, "off", "", map[string]string{controllers.ExecAgentAnnotation: "false"})

	p := start(t, ctlArgs(controllers.ExecRBACName)...)
	p.ready(t)
	eventually(t, "the legacy ClusterRoleBinding "+name+" to be deleted", func(ctx context.Context) (bool, error) {
		_, err := rbac.ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	enabled := map[string]string{controllers.ExecAgentAnnotation: "true"}
	ctlDeployment(t, custom, "agent", 2, "agent", enabled)
	ctlBarePod(t, byDefault, "agent", "", enabled)

	rb := ctlWaitBinding(t, custom, []string{custom + "/agent"})
	ctlWaitBinding(t, byDefault, []string{byDefault + "/default"})
	if !ctlManagedBy(rb.Labels) {
		t.Errorf("RoleBinding labels = %v, want %s", rb.Labels, managedBy)
	}
	if rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != name {
		t.Errorf("roleRef = %+v", rb.RoleRef)
	}
	role, err := rbac.ClusterRoles().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ClusterRole %s: %v", name, err)
	}
	if !ctlManagedBy(role.Labels) {
		t.Errorf("ClusterRole labels = %v, want %s", role.Labels, managedBy)
	}
	// Exec is really granted, and only into the pods of the service
	// account's own namespace.
	ctlWaitCanExec(t, custom, "agent", custom, true)
	ctlWaitCanExec(t, byDefault, "default", byDefault, true)
	for _, c := range []struct{ saNS, sa, ns string }{
		{custom, "agent", byDefault}, {custom, "agent", "kube-system"}, {byDefault, "default", custom},
		{custom, "default", custom}, // a service account of no enabled pod
	} {
		if ok, err := ctlCanExec(ctx, c.saNS, c.sa, c.ns); err != nil || ok {
			t.Errorf("%s/%s may exec in %s: %v, %v; want no", c.saNS, c.sa, c.ns, ok, err)
		}
	}
	if _, err := rbac.ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRoleBinding %s: err = %v, want NotFound", name, err)
	}

	// The disabled pod's namespace has no binding; that the controller read
	// that pod shows when it is enabled (binding made) and set to "false"
	// again (binding deleted).
	if _, err := rbac.RoleBindings(disabled).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("RoleBinding in %s with a %s=false pod: err = %v, want NotFound", disabled, controllers.ExecAgentAnnotation, err)
	}
	ctlAnnotate(t, disabled, "off", controllers.ExecAgentAnnotation, "true")
	ctlWaitBinding(t, disabled, []string{disabled + "/default"})
	ctlAnnotate(t, disabled, "off", controllers.ExecAgentAnnotation, "false")
	ctlWaitBinding(t, disabled, nil)
	ctlWaitCanExec(t, disabled, "default", disabled, false)

	// The custom namespace's pods go: its binding goes, and with it exec;
	// the other namespace keeps both.
	if err := env.client.AppsV1().Deployments(custom).Delete(ctx, "agent", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ctlWaitPods(t, custom, "app=agent", 0, "gone", nil)
	ctlWaitBinding(t, custom, nil)
	ctlWaitCanExec(t, custom, "agent", custom, false)
	ctlWaitBinding(t, byDefault, []string{byDefault + "/default"})
	ctlWaitCanExec(t, byDefault, "default", byDefault, true)

	// A RoleBinding of that name someone else made is not taken over.
	alice := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}
	if _, err := rbac.RoleBindings(foreign).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{alice},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctlBarePod(t, foreign, "agent", "", enabled)
	ctlEvent(t, foreign, name, corev1.EventTypeWarning, "NotManaged", controllers.ExecRBACName)
	if fb, err := rbac.RoleBindings(foreign).Get(ctx, name, metav1.GetOptions{}); err != nil ||
		len(fb.Labels) != 0 || !slices.Equal(fb.Subjects, []rbacv1.Subject{alice}) {
		t.Errorf("someone else's RoleBinding changed: %+v, %v", fb, err)
	}

	// On exit the last hookback session deletes the role and its bindings;
	// when another session still runs on the shared cluster it leaves them
	// to that one.
	p.signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d\n%s", code, p.stderr.String())
	}
	if strings.Contains(p.stderr.String(), "another live session runs this part") {
		t.Logf("another hookback session runs on the cluster: not checking that %s was deleted on exit", name)
		return
	}
	if _, err := rbac.RoleBindings(byDefault).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("RoleBinding %s/%s after exit: err = %v, want NotFound", byDefault, name, err)
	}
	if _, err := rbac.ClusterRoles().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole %s after exit: err = %v, want NotFound", name, err)
	}
	if _, err := rbac.RoleBindings(foreign).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Errorf("someone else's RoleBinding %s/%s after exit: %v, want it kept", foreign, name, err)
	}
	ctlWaitCanExec(t, byDefault, "default", byDefault, false)
}

// TestControllerExecRBACRefusedWriteEvent: when the apiserver refuses to
// create the ClusterRole (here an admission policy says no; missing RBAC
// would say it the same way, with a 403), exec-rbac records a Warning Event
// about it. The ClusterRole is cluster-scoped, so the Event goes to the
// default namespace.
func TestControllerExecRBACRefusedWriteEvent(t *testing.T) {
	requireLocal(t, whyKwokRuns)
	ctx := context.Background()
	since := metav1.Now().Rfc3339Copy() // Events of earlier runs are older
	ctlDeleteExecRBAC(t)
	t.Cleanup(func() { ctlDeleteExecRBAC(t) })
	ns := namespace(t)
	ctlDeny(t, "hookback-e2e-deny-"+controllers.ExecRBACObjectName+"-"+ns, rbacv1.GroupName, "clusterroles",
		admissionregistrationv1.Create, fmt.Sprintf("object.metadata.name != %q", controllers.ExecRBACObjectName),
		&admissionregistrationv1.MatchResources{},
		func(ctx context.Context) error {
			_, err := env.client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: controllers.ExecRBACObjectName},
			}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		})
	p := start(t, ctlArgs(controllers.ExecRBACName)...)
	p.ready(t)
	ctlBarePod(t, ns, "agent", "", map[string]string{controllers.ExecAgentAnnotation: "true"})

	eventually(t, "a Warning Event WriteRefused from exec-rbac about ClusterRole "+controllers.ExecRBACObjectName,
		func(ctx context.Context) (bool, error) {
			list, err := env.client.EventsV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			return slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool {
				return e.Regarding.Kind == "ClusterRole" && e.Regarding.Name == controllers.ExecRBACObjectName &&
					e.Type == corev1.EventTypeWarning && e.Reason == "WriteRefused" &&
					e.ReportingController == controllers.ExecRBACName && !e.CreationTimestamp.Before(&since)
			}), nil
		})
	if _, err := env.client.RbacV1().ClusterRoles().Get(ctx, controllers.ExecRBACObjectName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole %s: err = %v, want NotFound", controllers.ExecRBACObjectName, err)
	}
}
