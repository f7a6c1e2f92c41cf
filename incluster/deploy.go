// Package incluster is hookback installed in the cluster: the manifests
// `hookback render --in-cluster` prints, `hookback serve` (the process its
// pods run) and `hookback uninstall`. The webhook configurations come from
// the same template start registers, the handlers are the same built-ins,
// and the roles are built from permission declarations the same way check
// verifies them, so the laptop and the cluster cannot drift apart.
// Everything is labelled part-of hookback, never managed-by: the install
// belongs to whoever applies it, and a laptop session's cleanup must never
// delete it.
package incluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/internal/errkind"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/rbac"
	"github.com/hookback/hookback/registration"
)

// Fixed names and ports of the install.
const (
	Name             = "hookback"
	DefaultNamespace = "hookback-system"
	DefaultReplicas  = 2
	WebhookPort      = 8443
	MetricsPort      = 8080
	ServicePort      = 443
	// AnnotationInjectCA asks cert-manager's cainjector to fill the caBundle.
	AnnotationInjectCA = "cert-manager.io/inject-ca-from"
)

// Options say what to install and where.
type Options struct {
	Namespace string
	Image     string
	Replicas  int32
	// Webhooks and Controllers are resolved built-in names (assembly.Select).
	Webhooks, Controllers []string
	// Template is the webhook configuration template, as start uses it.
	Template []byte
	// CustomTemplate ships Template to the pods in a ConfigMap (the user's
	// --template); otherwise they use the template built into the image.
	CustomTemplate bool
	// CertManager serves cert-manager's certificate instead of the shared
	// CA's: a self-signed Issuer and a Certificate named hookback in
	// Namespace, mounted into the pods, its CA injected into the
	// configurations by cert-manager's cainjector.
	CertManager bool
}

// Validate reports every problem at once, a wrong value as a field.Error
// (the CLI names the flag of render --in-cluster that sets it); InCluster
// runs it.
func (o Options) Validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
		errs = append(errs, field.New("incluster.Options.Namespace", strconv.Quote(o.Namespace), strings.Join(msgs, "; ")))
	}
	if o.Image == "" || strings.ContainsAny(o.Image, " \t\n") {
		errs = append(errs, field.New("incluster.Options.Image", strconv.Quote(o.Image), "want an image reference"))
	}
	if o.Replicas < 1 || o.Replicas > 100 {
		errs = append(errs, field.New("incluster.Options.Replicas", strconv.Itoa(int(o.Replicas)), "want 1 to 100"))
	}
	if len(o.Template) == 0 {
		errs = append(errs, errors.New("the webhook template is empty"))
	}
	return errors.Join(errs...)
}

// Labels are on every object of the install.
func Labels() map[string]string {
	return map[string]string{"app.kubernetes.io/name": Name, "app.kubernetes.io/part-of": registration.ManagedByValue}
}

// InCluster returns every object to apply, in apply order: Namespace,
// ServiceAccount, roles and bindings, the template's ConfigMap (a custom
// template), Deployment, PodDisruptionBudget, Service, webhook
// configurations.
func InCluster(o Options) ([]runtime.Object, error) {
	if err := o.Validate(); err != nil {
		return nil, errkind.New(ErrInvalidConfig, err)
	}
	roles, err := serveRoles(o)
	if err != nil {
		return nil, fmt.Errorf("render in-cluster: %w", err)
	}
	hooks, err := webhookConfigurations(o)
	if err != nil {
		return nil, fmt.Errorf("render in-cluster: %w", err)
	}
	out := []runtime.Object{namespace(o), serviceAccount(o)}
	out = append(out, roles...)
	if o.CustomTemplate {
		out = append(out, templateConfigMap(o))
	}
	out = append(out, deployment(o), podDisruptionBudget(o), service(o))
	if o.CertManager {
		out = append(out, certManager(o)...)
	}
	return append(out, hooks...), nil
}

func meta(o Options, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: Labels()}
}

func namespace(o Options) *corev1.Namespace {
	m := meta(o, o.Namespace)
	m.Namespace = ""
	return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: m}
}

func serviceAccount(o Options) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta(o, Name)}
}

// serveRoles is the least-privilege roles of serve (ServePermissions), bound to
// the install's ServiceAccount.
func serveRoles(o Options) ([]runtime.Object, error) {
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: o.Namespace, Name: Name}
	perms, err := ServePermissions(o.Namespace, !o.CertManager, o.Webhooks, o.Controllers)
	if err != nil {
		return nil, err
	}
	r := rbac.GrantFor(perms, Name, []rbacv1.Subject{subject})
	out := []runtime.Object{r.ClusterRole, r.ClusterRoleBinding}
	r.ClusterRole.Labels, r.ClusterRoleBinding.Labels = Labels(), Labels()
	for i := range r.Roles {
		r.Roles[i].Labels, r.RoleBindings[i].Labels = Labels(), Labels()
		out = append(out, r.Roles[i], r.RoleBindings[i])
	}
	return out, nil
}

// webhookConfigurations are start's template rendered as start renders
// it (plan's Config.Objects), at the placement of an install: pointed at
// the install's Service, named as written, labelled as the install's.
func webhookConfigurations(o Options) ([]runtime.Object, error) {
	po := plan.DefaultOptions()
	// Webhook options change what a handler does, never its name or path;
	// the install has no project, inspector or controllers of a session.
	po.Webhooks, po.Controllers, po.ProjectDir, po.Inspector = o.Webhooks, nil, "", plan.InspectorConfig{}
	po.Template = registration.Template{Default: o.Template}
	c, err := plan.Complete(po)
	if err != nil {
		return nil, err
	}
	objs, err := c.Objects(plan.Placement{Target: registration.Target{Service: &registration.ServiceRef{Namespace: o.Namespace, Name: Name, Port: ServicePort}},
		Install: Labels()})
	if err != nil {
		return nil, err
	}
	reg := objs.Configurations
	out := make([]runtime.Object, 0, len(reg.Objects))
	for _, obj := range reg.Objects {
		if err := excludeNamespace(obj, o.Namespace); err != nil {
			return nil, err
		}
		if o.CertManager {
			ann := obj.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[AnnotationInjectCA] = o.Namespace + "/" + Name
			obj.SetAnnotations(ann)
		}
		out = append(out, obj)
	}
	return out, nil
}

// caBundleNote heads each webhook configuration in YAML.
const caBundleNote = `# No caBundle: cert-manager's cainjector fills it (render with --cert-manager for
# the cert-manager.io/inject-ca-from annotation), or hookback serve from the CA
# it keeps in a Secret.
`

// YAML is objs as a multi-document stream behind header (comment lines
// without "# "), without the empty status and creationTimestamp the typed
// objects marshal.
func YAML(header string, objs []runtime.Object) ([]byte, error) {
	var buf bytes.Buffer
	for _, line := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		if header != "" {
			buf.WriteString(strings.TrimRight("# "+line, " ") + "\n")
		}
	}
	for _, obj := range objs {
		b, err := clean(obj)
		if err != nil {
			return nil, fmt.Errorf("encode %T: %w", obj, err)
		}
		buf.WriteString("---\n")
		if k := obj.GetObjectKind().GroupVersionKind().Kind; k == registration.KindMutatingHook || k == registration.KindValidatingHook {
			buf.WriteString(caBundleNote)
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

func clean(obj runtime.Object) ([]byte, error) {
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	dropCreationTimestamp(m)
	if spec, ok := m["spec"].(map[string]any); ok {
		if tmpl, ok := spec["template"].(map[string]any); ok {
			dropCreationTimestamp(tmpl)
		}
	}
	return yaml.Marshal(m)
}

func dropCreationTimestamp(m map[string]any) {
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
}

// excludeNamespace keeps the install's own namespace out of every webhook's
// namespaceSelector: under failurePolicy Fail, hookback's pods must never
// wait on hookback to be admitted.
func excludeNamespace(o *unstructured.Unstructured, ns string) error {
	hooks, _, err := unstructured.NestedSlice(o.Object, "webhooks")
	if err != nil {
		return fmt.Errorf("%s %q: %w", o.GetKind(), o.GetName(), err)
	}
	for _, h := range hooks {
		hm, ok := h.(map[string]any)
		if !ok {
			continue
		}
		sel, _ := hm["namespaceSelector"].(map[string]any)
		if sel == nil {
			sel = map[string]any{}
			hm["namespaceSelector"] = sel
		}
		exprs, _ := sel["matchExpressions"].([]any)
		done := false
		for _, e := range exprs {
			em, _ := e.(map[string]any)
			if em["key"] == corev1.LabelMetadataName && em["operator"] == string(metav1.LabelSelectorOpNotIn) {
				vals, _ := em["values"].([]any)
				em["values"] = append(vals, ns)
				done = true
				break
			}
		}
		if !done {
			sel["matchExpressions"] = append(exprs, map[string]any{"key": corev1.LabelMetadataName,
				"operator": string(metav1.LabelSelectorOpNotIn), "values": []any{ns}})
		}
	}
	return unstructured.SetNestedSlice(o.Object, hooks, "webhooks")
}
