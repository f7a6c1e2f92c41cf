package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hookback/hookback/controller"
)

// Tests of the exec-rbac controller. It owns cluster-wide objects, so these
// tests must not run in parallel with another test that enables it; none of
// them calls t.Parallel.

// ctlDeleteExecRBAC deletes exec-rbac's ClusterRoleBinding and ClusterRole
// and waits until they are gone, so that each run starts from nothing.
func ctlDeleteExecRBAC(t *testing.T) {
	t.Helper()
	rbac := env.client.RbacV1()
	eventually(t, "ClusterRole and ClusterRoleBinding "+controller.ExecRBACObjectName+" to be deleted", func(ctx context.Context) (bool, error) {
		errB := rbac.ClusterRoleBindings().Delete(ctx, controller.ExecRBACObjectName, metav1.DeleteOptions{})
		errR := rbac.ClusterRoles().Delete(ctx, controller.ExecRBACObjectName, metav1.DeleteOptions{})
		for _, err := range []error{errB, errR} {
			if err != nil && !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		return apierrors.IsNotFound(errB) && apierrors.IsNotFound(errR), nil
	})
}

// ctlExecSubjects returns the ServiceAccount subjects of the binding, as
// "namespace/name".
func ctlExecSubjects(ctx context.Context) (*rbacv1.ClusterRoleBinding, []string, error) {
	crb, err := env.client.RbacV1().ClusterRoleBindings().Get(ctx, controller.ExecRBACObjectName, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	var out []string
	for _, s := range crb.Subjects {
		if s.Kind == rbacv1.ServiceAccountKind {
			out = append(out, s.Namespace+"/"+s.Name)
		}
	}
	return crb, out, nil
}

// ctlWaitSubjects waits until every subject of present is in the binding and
// none of absent is. Other namespaces of the shared cluster may contribute
// subjects too, so only these are looked at.
func ctlWaitSubjects(t *testing.T, what string, present, absent []string) *rbacv1.ClusterRoleBinding {
	t.Helper()
	var crb *rbacv1.ClusterRoleBinding
	eventually(t, what, func(ctx context.Context) (bool, error) {
		var subjects []string
		var err error
		if crb, subjects, err = ctlExecSubjects(ctx); err != nil {
			return false, err
		}
		for _, s := range present {
			if !slices.Contains(subjects, s) {
				return false, fmt.Errorf("subjects %v lack %s", subjects, s)
			}
		}
		for _, s := range absent {
			if slices.Contains(subjects, s) {
				return false, fmt.Errorf("subjects %v still have %s", subjects, s)
			}
		}
		return true, nil
	})
	return crb
}

func ctlManagedBy(labels map[string]string) bool {
	return labels["app.kubernetes.io/managed-by"] == "hookback"
}

func TestControllerExecRBAC(t *testing.T) {
	ctx := context.Background()
	// Registered before start, so it runs after hookback stopped: a later
	// test (or run) starts without the objects.
	ctlDeleteExecRBAC(t)
	t.Cleanup(func() { ctlDeleteExecRBAC(t) })

	custom, byDefault, disabled := namespace(t), namespace(t), namespace(t)
	if _, err := env.client.CoreV1().ServiceAccounts(custom).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	customSA, defaultSA, disabledSA := custom+"/agent", byDefault+"/default", disabled+"/default"
	// Exists before hookback starts, so it is in the informer's initial list
	// and in every subject computation below.
	ctlBarePod(t, disabled, "off", "", map[string]string{controller.ExecAgentAnnotation: "false"})

	p := start(t, ctlArgs(controller.ExecRBACName)...)
	p.ready(t)
	enabled := map[string]string{controller.ExecAgentAnnotation: "true"}
	ctlDeployment(t, custom, "agent", 2, "agent", enabled)
	ctlBarePod(t, byDefault, "agent", "", enabled)

	crb := ctlWaitSubjects(t, "both service accounts in ClusterRoleBinding "+controller.ExecRBACObjectName,
		[]string{customSA, defaultSA}, nil)
	// The reconcile that wrote both subjects listed the disabled pod too.
	_, subjects, _ := ctlExecSubjects(ctx)
	if slices.Contains(subjects, disabledSA) {
		t.Errorf("a pod with %s=false made %s a subject: %v", controller.ExecAgentAnnotation, disabledSA, subjects)
	}
	if !ctlManagedBy(crb.Labels) {
		t.Errorf("ClusterRoleBinding labels = %v, want %s", crb.Labels, managedBy)
	}
	if crb.RoleRef.Kind != "ClusterRole" || crb.RoleRef.Name != controller.ExecRBACObjectName {
		t.Errorf("roleRef = %+v", crb.RoleRef)
	}
	role, err := env.client.RbacV1().ClusterRoles().Get(ctx, controller.ExecRBACObjectName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ClusterRole %s: %v", controller.ExecRBACObjectName, err)
	}
	if !ctlManagedBy(role.Labels) {
		t.Errorf("ClusterRole labels = %v, want %s", role.Labels, managedBy)
	}
	if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.Resources, "pods/exec") && slices.Contains(r.Verbs, "create")
	}) {
		t.Errorf("ClusterRole rules do not grant pods/exec create: %+v", role.Rules)
	}

	// The custom namespace's pods go: its subject goes, the other stays.
	if err := env.client.AppsV1().Deployments(custom).Delete(ctx, "agent", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ctlWaitPods(t, custom, "app=agent", 0, "gone", nil)
	ctlWaitSubjects(t, "the subject of "+custom+" to be removed", []string{defaultSA}, []string{customSA})

	// A namespace deleted with its pods loses its subject too.
	if err := env.client.CoreV1().Namespaces().Delete(ctx, byDefault, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ctlWaitSubjects(t, "the subject of deleted namespace "+byDefault+" to be removed", nil, []string{defaultSA})

	// On exit the last hookback session deletes both objects; when another
	// session still runs on the shared cluster it leaves them to that one.
	p.signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d\n%s", code, p.stderr.String())
	}
	if strings.Contains(p.stderr.String(), "another live session runs this part") {
		t.Logf("another hookback session runs on the cluster: not checking that %s was deleted on exit", controller.ExecRBACObjectName)
		return
	}
	if _, err := env.client.RbacV1().ClusterRoleBindings().Get(ctx, controller.ExecRBACObjectName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRoleBinding %s after exit: err = %v, want NotFound", controller.ExecRBACObjectName, err)
	}
	if _, err := env.client.RbacV1().ClusterRoles().Get(ctx, controller.ExecRBACObjectName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole %s after exit: err = %v, want NotFound", controller.ExecRBACObjectName, err)
	}
}

// TestControllerExecRBACRefusedWriteEvent: when the apiserver refuses to
// create the ClusterRole (here an admission policy says no; missing RBAC
// would say it the same way, with a 403), exec-rbac records a Warning Event
// about it. The ClusterRole is cluster-scoped, so the Event goes to the
// default namespace.
func TestControllerExecRBACRefusedWriteEvent(t *testing.T) {
	ctx := context.Background()
	since := metav1.Now().Rfc3339Copy() // Events of earlier runs are older
	ctlDeleteExecRBAC(t)
	t.Cleanup(func() { ctlDeleteExecRBAC(t) })
	ns := namespace(t)
	ctlDeny(t, "hookback-e2e-deny-"+controller.ExecRBACObjectName+"-"+ns, rbacv1.GroupName, "clusterroles",
		admissionregistrationv1.Create, fmt.Sprintf("object.metadata.name != %q", controller.ExecRBACObjectName),
		&admissionregistrationv1.MatchResources{},
		func(ctx context.Context) error {
			_, err := env.client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: controller.ExecRBACObjectName},
			}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		})
	p := start(t, ctlArgs(controller.ExecRBACName)...)
	p.ready(t)
	ctlBarePod(t, ns, "agent", "", map[string]string{controller.ExecAgentAnnotation: "true"})

	eventually(t, "a Warning Event WriteRefused from exec-rbac about ClusterRole "+controller.ExecRBACObjectName,
		func(ctx context.Context) (bool, error) {
			list, err := env.client.EventsV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			return slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool {
				return e.Regarding.Kind == "ClusterRole" && e.Regarding.Name == controller.ExecRBACObjectName &&
					e.Type == corev1.EventTypeWarning && e.Reason == "WriteRefused" &&
					e.ReportingController == controller.ExecRBACName && !e.CreationTimestamp.Before(&since)
			}), nil
		})
	if _, err := env.client.RbacV1().ClusterRoles().Get(ctx, controller.ExecRBACObjectName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole %s: err = %v, want NotFound", controller.ExecRBACObjectName, err)
	}
}
