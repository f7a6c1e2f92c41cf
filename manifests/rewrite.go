package manifests

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/hookback/hookback/internal/errkind"
	"github.com/hookback/hookback/registration"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ErrInvalid marks user webhook manifests (--webhook-config) that hookback
// refuses to rewrite and apply.
var ErrInvalid = errors.New("manifests: bad webhook manifest")

// admissionGroupV1 is the only apiVersion of webhook configurations that
// hookback rewrites.
const admissionGroupV1 = "admissionregistration.k8s.io/v1"

// RewriteOptions say how Rewrite points webhooks at hookback.
type RewriteOptions struct {
	// URL is hookback's base URL, https://host:port; a trailing slash is dropped.
	URL string
	// CABundle is the base64 PEM set on every rewritten webhook; "" leaves
	// caBundle out (publicly trusted certificate).
	CABundle string
	// Session suffixes object names and labels them; required.
	Session string
	// LeaseRef is namespace/name of the session Lease, annotated on each object.
	LeaseRef string
	// KeepFailurePolicy keeps each webhook's failurePolicy. By default every
	// failurePolicy becomes Ignore, so that a stopped laptop cannot block the
	// cluster.
	KeepFailurePolicy bool
	// TimeoutSeconds 0 keeps each webhook's own; 1..30 overrides every one.
	TimeoutSeconds int32
}

// Rewrite returns what to apply and what to serve. Every document
// must be an admissionregistration.k8s.io/v1 Mutating- or
// ValidatingWebhookConfiguration; each webhook's clientConfig becomes
// {url: opts.URL + route.Path, caBundle: opts.CABundle}, its failurePolicy
// Ignore (unless KeepFailurePolicy) and its timeoutSeconds opts.TimeoutSeconds
// (when set). Every other field is kept as written. Objects are copied, named
// and labelled like Render's; docs are not modified. Routes are sorted by Path.
//
// On any problem nothing is returned: the error, which wraps ErrInvalid,
// lists every problem, each naming its source, document, object and reason.
func Rewrite(docs []Document, opts RewriteOptions) (*registration.Registration, []registration.Route, error) {
	if err := opts.check(); err != nil {
		return nil, nil, err
	}
	opts.URL = strings.TrimRight(opts.URL, "/")
	if len(docs) == 0 {
		return nil, nil, errkind.New(ErrInvalid, errors.New("no webhook configurations in the manifests"))
	}
	rw := &rewriter{opts: opts, routes: map[string]*registration.Route{}, seen: map[string]string{}}
	var objs []*unstructured.Unstructured
	var errs []error
	for _, d := range docs {
		o, derrs := rw.rewrite(d)
		for _, err := range derrs {
			errs = append(errs, fmt.Errorf("%s: %w", d.Location(), err))
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
	if len(errs) > 0 {
		return nil, nil, errkind.New(ErrInvalid, errors.Join(errs...))
	}
	routes := make([]registration.Route, 0, len(rw.routes))
	for _, r := range rw.routes {
		routes = append(routes, *r)
	}
	slices.SortFunc(routes, func(a, b registration.Route) int { return strings.Compare(a.Path, b.Path) })
	return &registration.Registration{Objects: objs}, routes, nil
}

func (o RewriteOptions) check() error {
	u, err := url.Parse(o.URL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("hookback URL %q is not an https URL", o.URL)
	}
	if o.Session == "" {
		return errors.New("no session to name the webhook configurations after")
	}
	if o.TimeoutSeconds < 0 || o.TimeoutSeconds > 30 {
		return fmt.Errorf("webhook timeout %ds is out of range: the apiserver allows 1 to 30 seconds", o.TimeoutSeconds)
	}
	return nil
}

// rewriter carries what Rewrite accumulates across documents.
type rewriter struct {
	opts   RewriteOptions
	routes map[string]*registration.Route // by Path
	seen   map[string]string              // kind/name -> location, to refuse duplicates
}

// rewrite checks and rewrites a copy of one document. It returns every
// problem, each naming the object, so the user can fix them in one go.
func (rw *rewriter) rewrite(d Document) (*unstructured.Unstructured, []error) {
	if d.Object == nil {
		return nil, []error{errors.New("empty object")}
	}
	o := d.Object.DeepCopy()
	what := describe(o)
	if err := checkKind(o); err != nil {
		return nil, []error{fmt.Errorf("%s: %w", what, err)}
	}
	if o.GetName() == "" {
		return nil, []error{fmt.Errorf("%s without metadata.name", o.GetKind())}
	}
	var errs []error
	key := o.GetKind() + "/" + o.GetName()
	if prev, dup := rw.seen[key]; dup {
		errs = append(errs, fmt.Errorf("%s is defined twice, also in %s", what, prev))
	} else {
		rw.seen[key] = d.Location()
	}
	hooks, found, err := unstructured.NestedSlice(o.Object, "webhooks")
	if err != nil {
		return nil, append(errs, fmt.Errorf("%s: webhooks: %w", what, err))
	}
	if !found || len(hooks) == 0 {
		return nil, append(errs, fmt.Errorf("%s has no webhooks", what))
	}
	for i, h := range hooks {
		hm, ok := h.(map[string]any)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: webhooks[%d] is not an object", what, i))
			continue
		}
		if err := rw.rewriteHook(hm); err != nil {
			errs = append(errs, fmt.Errorf("%s webhook %q: %w", what, hookName(hm, i), err))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	// NestedSlice returned a copy: put the edited webhooks back.
	if err := unstructured.SetNestedSlice(o.Object, hooks, "webhooks"); err != nil {
		return nil, []error{fmt.Errorf("%s: %w", what, err)}
	}
	registration.CleanMetadata(o)
	registration.Prepare(o, rw.opts.Session, rw.opts.LeaseRef)
	return o, nil
}

// rewriteHook points one webhook at hookback, editing it in place so that
// every field hookback does not own stays exactly as written.
func (rw *rewriter) rewriteHook(hm map[string]any) error {
	target, err := hookTarget(hm)
	if err != nil {
		return err
	}
	r, ok := rw.routes[target.Path]
	if !ok {
		r = &target
		rw.routes[target.Path] = r
	}
	if name := hookName(hm, -1); !slices.Contains(r.Webhooks, name) {
		r.Webhooks = append(r.Webhooks, name)
	}
	cc := map[string]any{"url": rw.opts.URL + r.Path}
	if rw.opts.CABundle != "" {
		cc["caBundle"] = rw.opts.CABundle
	}
	hm["clientConfig"] = cc
	if !rw.opts.KeepFailurePolicy {
		hm["failurePolicy"] = "Ignore"
	}
	if rw.opts.TimeoutSeconds > 0 {
		hm["timeoutSeconds"] = int64(rw.opts.TimeoutSeconds)
	}
	return nil
}

func checkKind(o *unstructured.Unstructured) error {
	kind := o.GetKind()
	isHook := kind == registration.KindMutatingHook || kind == registration.KindValidatingHook
	switch {
	case isHook && o.GetAPIVersion() == admissionGroupV1:
		return nil
	case isHook:
		return fmt.Errorf("%s is not supported: convert it to %s", o.GetAPIVersion(), admissionGroupV1)
	default:
		return fmt.Errorf("not a webhook configuration: only %s %s and %s can be registered; hookback serves the webhooks itself, so leave out the rest of the deployment",
			admissionGroupV1, registration.KindMutatingHook, registration.KindValidatingHook)
	}
}

// describe names an object in messages: `Kind "name"` or with its
// apiVersion when that is what is wrong.
func describe(o *unstructured.Unstructured) string {
	kind := o.GetKind()
	if kind == "" {
		kind = "object without kind"
	}
	if (kind == registration.KindMutatingHook || kind == registration.KindValidatingHook) && o.GetAPIVersion() == admissionGroupV1 {
		return fmt.Sprintf("%s %q", kind, o.GetName())
	}
	return fmt.Sprintf("%s %s %q", o.GetAPIVersion(), kind, o.GetName())
}

func hookName(hm map[string]any, i int) string {
	if n, ok := hm["name"].(string); ok && n != "" {
		return n
	}
	if i < 0 {
		return "(unnamed)"
	}
	return fmt.Sprintf("webhooks[%d]", i)
}

// intValue reads a JSON number however the object was built.
func intValue(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case int:
		return int64(n), true
	case float64:
		return int64(n), n == float64(int64(n))
	}
	return 0, false
}

// escapePath returns p as it appears in a URL.
func escapePath(p string) string { return (&url.URL{Path: p}).EscapedPath() }

func portString(p int64) string { return strconv.FormatInt(p, 10) }
