package registration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/internal/errkind"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
)

// CanaryPath is where the canary handler is served.
const CanaryPath = "/hookback-canary"

// LabelCanary scopes the canary webhook to ConfigMaps of one session, so it
// can never touch anything else.
const LabelCanary = "hookback.dev/canary"

// ErrVerify wraps every verification failure.
var ErrVerify = errors.New("registration: verification failed")

// Canary is the handler behind the canary webhook: it admits everything and
// remembers which ConfigMap names it saw.
type Canary struct {
	mu   sync.Mutex
	seen map[string]chan struct{}
}

var _ admission.Handler = (*Canary)(nil)

// NewCanary returns an empty canary.
func NewCanary() *Canary { return &Canary{seen: map[string]chan struct{}{}} }

func (c *Canary) ch(name string) chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.seen[name]
	if !ok {
		ch = make(chan struct{})
		c.seen[name] = ch
	}
	return ch
}

// Handle records that the apiserver reached us for req.Name.
func (c *Canary) Handle(_ context.Context, req admission.Request) admission.Response {
	ch := c.ch(req.Name)
	select {
	case <-ch:
	default:
		close(ch)
	}
	return admission.Allowed("hookback canary")
}

// CanaryConfiguration is the ValidatingWebhookConfiguration of the canary.
func CanaryConfiguration(session, url, caBundle, leaseRef string) *unstructured.Unstructured {
	cc := map[string]any{"url": url + CanaryPath}
	if caBundle != "" {
		cc["caBundle"] = caBundle
	}
	o := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": admissionGroupV1,
		"kind":       KindValidatingHook,
		"metadata":   map[string]any{"name": "hookback-canary"},
		"webhooks": []any{map[string]any{
			"name":                    "canary.hookback.dev",
			"clientConfig":            cc,
			"rules":                   []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"configmaps"}, "scope": "Namespaced"}},
			"objectSelector":          map[string]any{"matchLabels": map[string]any{LabelCanary: session}},
			"failurePolicy":           "Fail", // a failure must surface as an error we can diagnose
			"sideEffects":             "None",
			"timeoutSeconds":          int64(5),
			"admissionReviewVersions": []any{"v1"},
		}},
	}}
	Prepare(o, session, leaseRef)
	return o
}

// Verifier proves the apiserver reaches this process: it dry-run creates a
// ConfigMap that only the canary webhook selects, until the canary sees it.
type Verifier struct {
	Client    kubernetes.Interface
	Canary    *Canary
	Namespace string
	Session   string
	URL       string
	// Tunnel says the apiserver calls through the reverse tunnel, which
	// changes what a failure means.
	Tunnel bool
	// Timeout bounds the whole verification.
	Timeout time.Duration
}

// Verify returns the round trip of the request the canary saw, or an error
// that names the cause and the fix.
func (v *Verifier) Verify(ctx context.Context) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, v.Timeout)
	defer cancel()
	name := "hookback-canary-" + nonce()
	seen := v.Canary.ch(name)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: v.Namespace,
		Labels: map[string]string{LabelCanary: v.Session, LabelManagedBy: ManagedByValue},
	}}
	// The apiserver picks up a new webhook configuration asynchronously, so
	// the first creates may not call us yet: retry until the canary sees one.
	var pending error // a failure that may pass by itself, reported if it does not
	for backoff := 10 * time.Millisecond; ; backoff = min(2*backoff, 200*time.Millisecond) {
		start := time.Now()
		_, err := v.Client.CoreV1().ConfigMaps(v.Namespace).Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		rtt := time.Since(start)
		switch {
		case err == nil || ctx.Err() != nil:
		case v.Tunnel && noEndpoints(err):
			pending = err
		case v.Tunnel && !apierrors.IsForbidden(err):
			return 0, errkind.New(ErrVerify, DiagnoseTunnel(err, v.URL))
		default:
			return 0, errkind.New(ErrVerify, Diagnose(err, v.URL, v.Namespace))
		}
		select {
		case <-seen:
			return rtt, nil
		default:
		}
		select {
		case <-ctx.Done():
			if pending != nil {
				return 0, errkind.New(ErrVerify, DiagnoseTunnel(pending, v.URL))
			}
			return 0, errkind.New(ErrVerify, fmt.Errorf("the apiserver never called the canary webhook within %s: are the ValidatingAdmissionWebhook and MutatingAdmissionWebhook admission plugins enabled?", v.Timeout))
		case <-seen:
			return rtt, nil
		case <-time.After(backoff):
		}
	}
}

// noEndpoints reports the apiserver finding no ready endpoint behind the
// relay's Service. Right after the relay pod turns ready this passes by
// itself: the endpoints controller publishes the pod a moment later.
func noEndpoints(err error) bool {
	return strings.Contains(err.Error(), "no endpoints available for service")
}

// tunnelHint ends the diagnoses of an apiserver that cannot reach this
// machine at all.
const tunnelHint = "; or, when the cluster cannot route to this machine at all (NAT, a cloud cluster), use {tunnel.Config.Enabled}"

// DiagnoseTunnel explains why the apiserver's call through the reverse
// tunnel failed.
func DiagnoseTunnel(err error, url string) error {
	msg := err.Error()
	var hint string
	switch {
	case strings.Contains(msg, "unknown authority"), strings.Contains(msg, "certificate"):
		hint = "the apiserver reached the relay but does not trust the certificate served through it: run `hookback cleanup` and start again"
	case strings.Contains(msg, "no endpoints"), strings.Contains(msg, "service"):
		hint = "the relay's Service has no ready endpoint: check the relay pod and its Service"
	default:
		hint = "the relay did not pass the call on: the tunnel may have dropped meanwhile (see the warnings above); hookback re-attaches and verifies again by itself"
	}
	return fmt.Errorf("calling %s through the reverse tunnel: %s (apiserver said: %s)", url, hint, msg)
}

// Diagnose explains why the apiserver could not call url, from the error
// the apiserver returned.
func Diagnose(err error, url, namespace string) error {
	msg := err.Error()
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(msg, s) {
				return true
			}
		}
		return false
	}
	var hint string
	// advise is the field the hint says to set, when it says one.
	advise := "plan.Options.AdvertiseAddress"
	switch {
	case has("connection refused"):
		hint = "connection refused: the apiserver reached the address but nothing listens on that port there. " +
			"The advertise address is not this machine as the apiserver sees it: set {plan.Options.AdvertiseAddress} to an address of this machine the apiserver can route to (and check {plan.Options.BindAddress} and {plan.Options.Port})"
	case has("certificate signed by unknown authority", "unknown authority"):
		advise = ""
		hint = "unknown certificate authority: the apiserver does not trust the certificate it was served. " +
			"Something else may be answering on that address, or the caBundle is stale: check that the address is this machine and run `hookback cleanup`"
	case has("certificate is valid for", "certificate is not valid for", "doesn't contain any IP SANs", "not valid for any names"):
		hint = "certificate not valid for the address: the serving certificate does not cover the host in the URL. " +
			"If the address is NATed or tunnelled, set {plan.Options.AdvertiseAddress} to the name or IP the apiserver dials"
	case has("no route to host", "network is unreachable"):
		hint = "no route: the apiserver has no route to this machine. Set {plan.Options.AdvertiseAddress} to an address on a network the apiserver shares with this machine" + tunnelHint
	case has("i/o timeout", "context deadline exceeded", "Client.Timeout", "timeout"):
		hint = "timeout: the apiserver's connection to this machine timed out. A firewall may drop the port, or the address is not routable from the cluster: open the port or set {plan.Options.AdvertiseAddress}" + tunnelHint
	case has("no such host"):
		hint = "DNS: the apiserver cannot resolve the advertised name. Set {plan.Options.AdvertiseAddress} to an IP or a name the cluster's DNS resolves"
	case apierrors.IsForbidden(err) && !has("admission webhook"):
		advise = "plan.Options.LeaseNamespace"
		hint = fmt.Sprintf("forbidden: hookback may not create ConfigMaps in namespace %q for the dry-run canary. Grant `create configmaps` there, or pick another {plan.Options.LeaseNamespace}", namespace)
	default:
		advise, hint = "", "unexpected error"
	}
	if advise == "" {
		return fmt.Errorf("calling %s: %s (apiserver said: %s)", url, hint, msg)
	}
	// The advice names the session's fields, which the CLI shows as its
	// flags: Verify is the session's proof that the cluster reaches it.
	return field.Advise(advise, "calling %s: %s (apiserver said: %s)", url, hint, msg)
}

func nonce() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
