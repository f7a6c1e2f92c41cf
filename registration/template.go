package registration

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/template"

	"github.com/hookback/hookback/internal/errkind"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Labels and annotations hookback puts on everything it writes.
const (
	LabelManagedBy     = "app.kubernetes.io/managed-by"
	ManagedByValue     = "hookback"
	LabelSession       = "hookback.dev/session"
	AnnotationLease    = "hookback.dev/lease"
	admissionGroupV1   = "admissionregistration.k8s.io/v1"
	KindMutatingHook   = "MutatingWebhookConfiguration"
	KindValidatingHook = "ValidatingWebhookConfiguration"
)

// ManagedSelector selects everything hookback manages.
const ManagedSelector = LabelManagedBy + "=" + ManagedByValue

// ErrTemplate marks a template that renders something hookback refuses to apply.
var ErrTemplate = errors.New("registration: bad webhook template")

// TemplateData is what webhook-url.yaml.tmpl sees.
type TemplateData struct {
	// URL is https://host:port, no trailing slash.
	URL string
	// CABundle is the base64 PEM of the CA, empty for a publicly trusted certificate.
	CABundle string
	// Session names this run; it suffixes object names.
	Session string
	// Enabled lists the enabled webhook names; the template function
	// `enabled NAME` tests it.
	Enabled []string
	// Namespaces are those named with --namespace: the opt-in built-ins
	// select exactly them instead of seed 002's label.
	Namespaces []string
}

// Registration is a rendered template: what hookback will apply.
type Registration struct {
	Objects []*unstructured.Unstructured
}

// RenderOptions are the facts needed to validate and label a rendering.
type RenderOptions struct {
	// Paths are the URL paths the enabled handlers serve.
	Paths []string
	// LeaseRef is namespace/name of the session Lease, recorded on each
	// object so another run can tell whether the session is alive.
	LeaseRef string
}

// Render executes the template, refuses anything but admissionregistration
// v1 webhook configurations pointing at served paths, suffixes names with the
// session and adds hookback's labels.
func Render(name string, tmpl []byte, data TemplateData, opts RenderOptions) (*Registration, error) {
	objs, err := execute(name, tmpl, data, opts.Paths)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		Prepare(o, data.Session, opts.LeaseRef)
	}
	return &Registration{Objects: objs}, nil
}

// execute runs the template and checks what it rendered: webhook
// configurations only, each defined once, pointing at served paths.
func execute(name string, tmpl []byte, data TemplateData, paths []string) ([]*unstructured.Unstructured, error) {
	t, err := template.New(name).Option("missingkey=error").Funcs(template.FuncMap{
		"enabled": func(n string) bool { return slices.Contains(data.Enabled, n) },
		"dict":    dict,
	}).Parse(string(tmpl))
	if err != nil {
		return nil, errkind.New(ErrTemplate, fmt.Errorf("bad webhook template: parse %s: %w", name, err))
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return nil, errkind.New(ErrTemplate, fmt.Errorf("bad webhook template: execute %s: %w", name, err))
	}
	objs, err := decodeDocuments(buf.Bytes())
	if err != nil {
		return nil, errkind.New(ErrTemplate, fmt.Errorf("bad webhook template: %s: %w", name, err))
	}
	seen := map[string]bool{}
	for _, o := range objs {
		if err := checkConfiguration(o, paths); err != nil {
			return nil, errkind.New(ErrTemplate, fmt.Errorf("bad webhook template: %s: %w", name, err))
		}
		// Keyed before Prepare's suffix, which is the same for every object.
		key := o.GetKind() + "/" + o.GetName()
		if seen[key] {
			return nil, errkind.New(ErrTemplate, fmt.Errorf("bad webhook template: %s: %s defined twice", name, key))
		}
		seen[key] = true
	}
	return objs, nil
}

// dict builds a map from key, value pairs, to pass several values to a
// named template.
func dict(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, errors.New("dict wants key, value pairs")
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return nil, fmt.Errorf("dict key %v is not a string", kv[i])
		}
		m[k] = kv[i+1]
	}
	return m, nil
}

func decodeDocuments(b []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var objs []*unstructured.Unstructured
	for i := 1; ; i++ {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

func checkConfiguration(o *unstructured.Unstructured, paths []string) error {
	if o.GetAPIVersion() != admissionGroupV1 || (o.GetKind() != KindMutatingHook && o.GetKind() != KindValidatingHook) {
		return fmt.Errorf("%s %q: only %s MutatingWebhookConfiguration and ValidatingWebhookConfiguration are allowed",
			o.GroupVersionKind(), o.GetName(), admissionGroupV1)
	}
	if o.GetName() == "" {
		return fmt.Errorf("%s without metadata.name", o.GetKind())
	}
	hooks, _, err := unstructured.NestedSlice(o.Object, "webhooks")
	if err != nil {
		return fmt.Errorf("%s %q: webhooks: %w", o.GetKind(), o.GetName(), err)
	}
	for i, h := range hooks {
		hm, ok := h.(map[string]any)
		if !ok {
			return fmt.Errorf("%s %q: webhooks[%d] is not an object", o.GetKind(), o.GetName(), i)
		}
		if err := checkWebhookURL(hm, paths); err != nil {
			return fmt.Errorf("%s %q webhook %q: %w", o.GetKind(), o.GetName(), hm["name"], err)
		}
	}
	return nil
}

func checkWebhookURL(hook map[string]any, paths []string) error {
	if _, ok, _ := unstructured.NestedMap(hook, "clientConfig", "service"); ok {
		return errors.New("clientConfig.service points inside the cluster: hookback serves out of cluster, use clientConfig.url: {{ .URL }}/path")
	}
	raw, ok, _ := unstructured.NestedString(hook, "clientConfig", "url")
	if !ok || raw == "" {
		return errors.New("no clientConfig.url")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" {
		return fmt.Errorf("clientConfig.url %q is not an https URL", raw)
	}
	if !slices.Contains(paths, u.Path) {
		return fmt.Errorf("path %q is not served by any enabled webhook (served: %s)", u.Path, strings.Join(paths, ", "))
	}
	return nil
}

// Prepare suffixes the name with the session, so two developers on one
// cluster never collide, and labels the object as hookback's.
func Prepare(o *unstructured.Unstructured, session, leaseRef string) {
	if !strings.HasSuffix(o.GetName(), "-"+session) {
		o.SetName(o.GetName() + "-" + session)
	}
	labels := o.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelManagedBy] = ManagedByValue
	labels[LabelSession] = session
	o.SetLabels(labels)
	if leaseRef != "" {
		ann := o.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[AnnotationLease] = leaseRef
		o.SetAnnotations(ann)
	}
}

// YAML renders the registration as a multi-document YAML stream.
func (r *Registration) YAML() ([]byte, error) {
	var buf bytes.Buffer
	for i, o := range r.Objects {
		if i > 0 {
			buf.WriteString("---\n")
		}
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, fmt.Errorf("marshal %s %q: %w", o.GetKind(), o.GetName(), err)
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

// Webhooks lists "kind/name: webhook names" lines for the ready banner.
func (r *Registration) Webhooks() []string {
	var out []string
	for _, o := range r.Objects {
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for _, h := range hooks {
			hm, _ := h.(map[string]any)
			out = append(out, fmt.Sprintf("%v -> %s", hm["name"], clientConfigTarget(hm)))
		}
	}
	return out
}

// clientConfigTarget is where a webhook's clientConfig sends reviews: its
// url, or (with --tunnel) its Service as "service NS/NAME:PORT/PATH".
func clientConfigTarget(hook map[string]any) string {
	if u, _, _ := unstructured.NestedString(hook, "clientConfig", "url"); u != "" {
		return u
	}
	svc, ok, _ := unstructured.NestedMap(hook, "clientConfig", "service")
	if !ok {
		return "(no clientConfig)"
	}
	path, _ := svc["path"].(string)
	return fmt.Sprintf("service %v/%v:%v%s", svc["namespace"], svc["name"], svc["port"], path)
}

// Template is the webhook configuration template and where it comes from.
type Template struct {
	// Path is the file to read and watch; empty means Default (embedded).
	Path    string
	Default []byte
}

// Load returns the template text and a name for messages.
func (t Template) Load() (string, []byte, error) {
	if t.Path == "" {
		return "webhook-url.yaml.tmpl (built in)", t.Default, nil
	}
	b, err := os.ReadFile(t.Path)
	if err != nil {
		return "", nil, fmt.Errorf("read template: %w", err)
	}
	return t.Path, b, nil
}
