package plan

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookback/hookback/fault"
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/manifests"
	"github.com/hookback/hookback/rbac"
	"github.com/hookback/hookback/upstream"
)

// Upstream is where the reviews of the user's own webhooks go: the
// developer's server. Service is empty for the default upstream, else
// NAMESPACE/NAME of the in-cluster Service whose webhooks go here.
type Upstream struct {
	Service string
	URL     string
}

// ParseUpstream reads `URL` or `NAMESPACE/SERVICE=URL`.
func ParseUpstream(s string) (Upstream, error) {
	key, raw, mapped := strings.Cut(s, "=")
	if !mapped {
		key, raw = "", s
	}
	if mapped && strings.Count(key, "/") != 1 {
		return Upstream{}, field.New("plan.UserWebhooks.Upstream", strconv.Quote(s), "want URL or NAMESPACE/SERVICE=URL")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Upstream{}, field.New("plan.UserWebhooks.Upstream", strconv.Quote(s), "want an http or https URL such as https://127.0.0.1:9443")
	}
	return Upstream{Service: key, URL: raw}, nil
}

// UserWebhooks are the user's own webhook manifests and where their reviews
// go: `start --webhook-config ... --upstream ...`.
type UserWebhooks struct {
	// Manifests are files, directories or "-" (Stdin).
	Manifests []string
	Stdin     io.Reader
	// Upstream are the upstreams as written (--upstream): URL or
	// NAMESPACE/SERVICE=URL. Complete parses them, after any already in
	// Upstreams; commands that complete no Config call ParseUpstreams.
	Upstream  []string
	Upstreams []Upstream
	// UpstreamDefaulted says project mode chose the upstream (Complete),
	// not the user.
	UpstreamDefaulted bool
	// RecordedPaths lets the upstreams stand without Manifests (`hookback
	// test`): a recorded case then goes to the upstream at the path it was
	// recorded at (TestSetup.Recorded).
	RecordedPaths bool
	// UpstreamCA trusts the upstreams' certificates; UpstreamInsecure skips
	// verification (loopback upstreams only).
	UpstreamCA       string
	UpstreamInsecure bool
	// KeepFailurePolicy keeps each webhook's failurePolicy; by default it
	// becomes Ignore, so a stopped debugger never wedges the cluster.
	KeepFailurePolicy bool
	// Timeout, when set, overrides every timeoutSeconds (1s..30s): 30s is
	// what stepping through a handler in a debugger wants.
	Timeout time.Duration
	// LateAnswerTimeout bounds how long an answer is still read after the
	// apiserver stopped waiting (then reported as late); zero reads none.
	LateAnswerTimeout time.Duration
	// Shadow compares each answer with the webhook deployed in the cluster
	// (start --shadow); hookback then always allows, without a patch.
	Shadow ShadowConfig
	// CertDir, when set, is where the upstream reads its serving pair
	// (controller-runtime's cert dir): start writes one there, signed by
	// hookback's CA, unless a pair it did not write is there, and then
	// trusts that CA for the upstreams (unless UpstreamCA or
	// UpstreamInsecure say otherwise).
	CertDir string
	// Fault, when set, makes every one of these webhooks misbehave on
	// purpose (start --fault): refuse, timeout, error or slow=DUR, see
	// package fault.
	Fault string
}

// permissions are what the manifests need beyond the webhook
// configurations every session may write: the CRDs'.
func manifestPermissions(m *manifests.Set) []rbac.Permission {
	if m == nil || len(m.CRDs) == 0 {
		return nil
	}
	return manifests.CRDPermissions()
}

// ParseUpstreams returns u with Upstream parsed into Upstreams (after
// those already there), and every upstream that does not parse.
func (u UserWebhooks) ParseUpstreams() (UserWebhooks, error) {
	var errs []error
	ups := slices.Clone(u.Upstreams)
	for _, s := range u.Upstream {
		up, err := ParseUpstream(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ups = append(ups, up)
	}
	u.Upstream, u.Upstreams = nil, ups
	return u, errors.Join(errs...)
}

// Validate reports every problem at once, each a field.Error naming its
// field: the CLI runs it with its own flag checks, so they are listed
// together, with flag names.
func (u UserWebhooks) Validate() error {
	var errs []error
	u, err := u.ParseUpstreams()
	if err != nil {
		errs = append(errs, err)
	}
	// Manifests without an upstream are valid: rbac and check ask what they
	// need. What serves them (start, render, audit, test) reports each
	// webhook no upstream takes, by name (session's upstreamFor).
	if len(u.Manifests) == 0 && len(u.Upstreams) > 0 && !u.RecordedPaths {
		errs = append(errs, field.Clause("plan.UserWebhooks.Upstream", "", "needs {plan.UserWebhooks.Manifests}: the manifests that say which requests go to it"))
	}
	if u.CertDir != "" && len(u.Manifests) == 0 && !u.RecordedPaths {
		errs = append(errs, field.Clause("plan.UserWebhooks.CertDir", "", "needs {plan.UserWebhooks.Manifests} (or a project): the certificate is for your webhook server"))
	}
	if u.Timeout != 0 && (u.Timeout < time.Second || u.Timeout > 30*time.Second) {
		errs = append(errs, field.New("plan.UserWebhooks.Timeout", u.Timeout.String(), "want 1s to 30s (the apiserver's limit)"))
	}
	if u.Fault != "" {
		if _, err := fault.Parse(u.Fault); err != nil {
			errs = append(errs, field.New("plan.UserWebhooks.Fault", strconv.Quote(u.Fault), "want refuse, timeout, error or slow=DUR (such as slow=3s)"))
		}
		if len(u.Manifests) == 0 {
			errs = append(errs, field.Clause("plan.UserWebhooks.Fault", "", "needs {plan.UserWebhooks.Manifests}: faults go into your own webhooks, never the built-ins"))
		}
	}
	if err := u.Shadow.Validate(u); err != nil {
		errs = append(errs, err)
	}
	for _, up := range u.Upstreams {
		if err := u.UpstreamOptions(up).Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// UpstreamOptions are the forwarding options of up.
func (u UserWebhooks) UpstreamOptions(up Upstream) upstream.Options {
	base, _ := url.Parse(up.URL)
	return upstream.Options{Base: base, CAFile: u.UpstreamCA, Insecure: u.UpstreamInsecure}
}

// ManifestOptions are the rewrite options for hookback's URL and caBundle.
func (u UserWebhooks) ManifestOptions(url, caBundle, session, leaseRef string) manifests.RewriteOptions {
	return manifests.RewriteOptions{URL: url, CABundle: caBundle, Session: session, LeaseRef: leaseRef,
		KeepFailurePolicy: u.KeepFailurePolicy, TimeoutSeconds: int32(u.Timeout / time.Second)}
}

// CheckMapped refuses an --upstream NAMESPACE/SERVICE=URL that no webhook
// and no CRD conversion of the manifests sends to: a typo, or the name
// before kustomize's namePrefix, would otherwise go unnoticed.
func (u UserWebhooks) CheckMapped(m *manifests.Set) error {
	named := m.Services()
	var errs []error
	for _, up := range u.Upstreams {
		if up.Service == "" || slices.Contains(named, up.Service) {
			continue
		}
		list := "none: every webhook there has a clientConfig.url"
		if len(named) > 0 {
			list = strings.Join(named, ", ")
		}
		errs = append(errs, field.New("plan.UserWebhooks.Upstream", up.Service+"="+up.URL, fmt.Sprintf("no webhook or CRD conversion in the manifests sends to Service %s; the Services they name (as rendered, kustomize's namespace and namePrefix applied): %s",
			up.Service, list)))
	}
	return errors.Join(errs...)
}
