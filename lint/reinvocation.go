package lint

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// Reinvocation is what a mutating webhook's server did when `lint --probe`
// sent it a sample object, then its own output as a new review: a second
// change (Paths), a denial or a failure of the second call (Message).
type Reinvocation struct {
	// Object is its configuration's Ref, Webhook its name.
	Object, Webhook string
	// Sample names what was sent: "pods CREATE (a minimal object)".
	Sample  string
	Paths   []string
	Message string
}

// reinvocationAdvice is the fix: the handler's, not the configuration's.
const reinvocationAdvice = "make the handler look before it changes: add the sidecar, annotation or default only when it is not there yet, so that a second call returns no patch or one that changes nothing; reinvocationPolicy Never only hides this until another webhook's change makes it IfNeeded"

// checkReinvocation reports each unsafe second call lint --probe saw:
// an error when the webhook's reinvocationPolicy is IfNeeded (the
// apiserver does exactly this whenever a later webhook changes the
// object), a warning otherwise. Without --probe there is nothing to check.
func checkReinvocation(in *Input, r *Rule) []Finding {
	var fs []Finding
	for _, ri := range in.Reinvocations {
		h := in.hook(ri.Object, ri.Webhook)
		if h == nil {
			continue
		}
		sev, when := Warning, "under reinvocationPolicy IfNeeded the apiserver would do the same after any later webhook's change"
		if h.Reinvocation == admissionregistrationv1.IfNeededReinvocationPolicy {
			sev, when = Error, "its reinvocationPolicy is IfNeeded: the apiserver calls it again with its own output whenever a later webhook changes the object"
		}
		what := ri.Message
		if len(ri.Paths) > 0 {
			what = "second call patched " + strings.Join(ri.Paths, ", ")
		}
		f := h.finding(r, sev, "reinvocationPolicy", "not idempotent: sent its own output for %s, %s; %s", ri.Sample, what, when)
		f.Advice = reinvocationAdvice
		fs = append(fs, f)
	}
	return fs
}

// hook is the webhook of that configuration and name.
func (in *Input) hook(object, name string) *Hook {
	for _, h := range in.Hooks {
		if h.Config.Ref() == object && h.Name == name {
			return h
		}
	}
	return nil
}

// ServerPath is where the webhook's server answers it: the Service's path,
// or the url's path and query; "/" when neither says.
func (h *Hook) ServerPath() string {
	cc := h.ClientConfig
	switch {
	case cc.Service != nil && cc.Service.Path != nil:
		return *cc.Service.Path
	case cc.URL != nil:
		return urlPath(*cc.URL)
	}
	return "/"
}

// urlPath is a url's path with its query, as a server sees it.
func urlPath(u string) string {
	rest := u
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	i := strings.IndexAny(rest, "/?")
	if i < 0 {
		return "/"
	}
	p := rest[i:]
	if strings.HasPrefix(p, "?") {
		p = "/" + p
	}
	return p
}

// String names a reinvocation in logs.
func (r Reinvocation) String() string {
	return fmt.Sprintf("%s %s: %s", r.Object, r.Webhook, r.Sample)
}
