package upstream

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/field"
)

// Shadow sends each review both to your upstream (Local) and to the
// webhook deployed in the cluster (Deployed), reports where the two
// answers differ, and always allows without a patch: hookback's copies of
// the webhooks never change what the apiserver does, the deployed
// webhook's own registration decides.
type Shadow struct {
	Local, Deployed admission.Handler
	// Report receives every comparison; it must not block for long.
	Report func(ShadowResult)
}

var _ admission.Handler = (*Shadow)(nil)

// ShadowResult is one review answered by both.
type ShadowResult struct {
	Namespace, Name string
	// Review is the review as received, valid only while Report runs, and
	// set only when the answers differ; Answer is the AdmissionReview your
	// webhook's answer makes (nil when its call failed).
	Review, Answer  []byte
	Local, Deployed admission.Response
	// Differences are empty when both answered alike: decision, message,
	// and patch operations after normalising their order. They name
	// patch paths, never values (they may hold a Secret's data).
	Differences []string
}

// Handle implements admission.Handler.
func (s *Shadow) Handle(ctx context.Context, req admission.Request) admission.Response {
	var deployed admission.Response
	var wg sync.WaitGroup
	wg.Go(func() { deployed = s.Deployed.Handle(ctx, req) })
	local := s.Local.Handle(ctx, req)
	wg.Wait()
	res := ShadowResult{Namespace: req.Namespace, Name: req.Name, Local: local, Deployed: deployed, Differences: Compare(local, deployed),
		Answer: answerOf(req, local)}
	if len(res.Differences) > 0 {
		res.Review = req.Review()
	}
	s.Report(res)
	return admission.Allowed("")
}

// answerOf is the AdmissionReview r answers to req; nil for a failed call.
func answerOf(req admission.Request, r admission.Response) []byte {
	if r.Failed() {
		return nil
	}
	resp := map[string]any{"uid": req.UID, "allowed": r.Allowed}
	if r.Result != nil {
		resp["status"] = r.Result
	}
	if len(r.Patch) > 0 {
		resp["patch"], resp["patchType"] = r.Patch, "JSONPatch"
	}
	if len(r.Warnings) > 0 {
		resp["warnings"] = r.Warnings
	}
	b, err := json.Marshal(map[string]any{"apiVersion": req.ReviewVersion, "kind": "AdmissionReview", "response": resp})
	if err != nil {
		return nil
	}
	return b
}

// Compare lists how two answers differ, yours then the deployed one's.
func Compare(local, deployed admission.Response) []string {
	var out []string
	if a, b := decision(local), decision(deployed); a != b {
		out = append(out, fmt.Sprintf("decision: yours %s, deployed %s", a, b))
	}
	if a, b := message(local), message(deployed); a != b {
		out = append(out, fmt.Sprintf("message: yours %q, deployed %q", a, b))
	}
	a, b := normalPatch(local.Patch), normalPatch(deployed.Patch)
	if !slices.Equal(a, b) {
		out = append(out, fmt.Sprintf("patch: yours %s, deployed %s", paths(a), paths(b)))
	}
	return out
}

func decision(r admission.Response) string {
	switch {
	case r.Failed():
		return "failed"
	case !r.Allowed:
		return "denied"
	case len(r.Patch) > 0:
		return "patched"
	}
	return "allowed"
}

func message(r admission.Response) string {
	if r.Result == nil {
		return ""
	}
	return r.Result.Message
}

// normalPatch is each operation re-encoded (keys sorted), in sorted
// order: two patches that do the same in another order compare equal.
func normalPatch(patch []byte) []string {
	var ops []map[string]any
	if json.Unmarshal(patch, &ops) != nil {
		return nil
	}
	out := make([]string, 0, len(ops))
	for _, op := range ops {
		b, _ := json.Marshal(op)
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

// paths shows a normalised patch by operation and path only.
func paths(ops []string) string {
	if len(ops) == 0 {
		return "no patch"
	}
	var s []string
	for _, o := range ops {
		var op struct{ Op, Path string }
		_ = json.Unmarshal([]byte(o), &op)
		s = append(s, op.Op+" "+op.Path)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// ShadowTarget says where the deployed webhook is reached.
type ShadowTarget struct {
	// URL is https (or http on loopback); with a path it is used as is,
	// without one each webhook's own path is appended.
	URL string
	// CAFile verifies an https URL instead of the system roots.
	CAFile string
	// Client and Proxy reach a Service through the apiserver's service
	// proxy: Proxy is its .../proxy URL, Client carries the credentials.
	Client *http.Client
	Proxy  string
	// Name is what messages call it: NAMESPACE/SERVICE:PORT for a Service,
	// the URL's host when empty.
	Name string
}

// NewShadowTarget forwards to the deployed webhook at path (its path in
// the manifests).
func NewShadowTarget(t ShadowTarget, path string, opts Options) (*Forwarder, error) {
	if t.Proxy != "" {
		base, err := url.Parse(t.Proxy)
		if err != nil {
			return nil, field.Errorf("upstream.ShadowTarget.Proxy", "", "service proxy %q: %w", t.Proxy, err)
		}
		opts.Base, opts.Role = base, "deployed webhook "+t.Name+" (through the apiserver's service proxy)"
		f := &Forwarder{opts: opts, target: strings.TrimSuffix(t.Proxy, "/") + "/" + strings.TrimLeft(path, "/"), client: t.Client}
		return f, nil
	}
	u, err := url.Parse(t.URL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, field.New("upstream.ShadowTarget.URL", strconv.Quote(t.URL), "want NAMESPACE/SERVICE[:PORT] or an https URL")
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return nil, field.New("upstream.ShadowTarget.URL", t.URL, "plain http only on loopback; use https")
	}
	if u.Path != "" && u.Path != "/" {
		path, u.Path, u.RawPath = u.EscapedPath(), "", ""
	}
	opts.Base, opts.CAFile, opts.Insecure = u, t.CAFile, false
	opts.Role, opts.CAFlag = "deployed webhook "+u.Host, "--shadow-ca"
	if t.CAFile == "" {
		// The system roots: Options.tlsConfig leaves RootCAs nil.
		if _, err := x509.SystemCertPool(); err != nil {
			return nil, field.New("upstream.ShadowTarget.URL", t.URL, fmt.Sprintf("no system roots (%v): pass {upstream.ShadowTarget.CAFile}", err))
		}
	}
	return New(opts, path)
}
