package main

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"net/http"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hookback/hookback/bench/internal/loopcert"
)

// bare is the floor the observers are measured against: three webhooks
// that are not hookback, a minimal Go HTTPS server that decodes the review
// and answers allowed, registered where start --chain's observers sit (a
// mutating configuration sorted first, one sorted last with
// reinvocationPolicy IfNeeded, a validating one). What they add is what
// any three webhooks cost the apiserver: serializing the review, the HTTPS
// POST, decoding the answer.
type bare struct {
	// h2 serves HTTP/2 (as hookback does) instead of HTTP/1.1 only.
	h2       bool
	url      string
	caBundle []byte
	srv      *http.Server
	// calls count each path's calls: what proves the bare webhooks were
	// called, and were no longer once removed.
	calls map[string]*atomicCounter
	// http2 counts the calls that came over HTTP/2: what proves the h2
	// floor is one.
	http2 atomicCounter
}

var barePaths = []string{"/first", "/last", "/validating"}

// startBare serves the three over HTTP/1.1, or with h2 over HTTP/2 too
// (offered first, as hookback's server offers it, so the apiserver's
// client takes it).
func startBare(h2 bool) (*bare, error) {
	cert, err := loopcert.New("bench-bare")
	if err != nil {
		return nil, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.DER})
	conf := &tls.Config{Certificates: []tls.Certificate{cert.TLS()}, MinVersion: tls.VersionTLS12}
	if h2 {
		conf.NextProtos = []string{"h2", "http/1.1"}
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", conf)
	if err != nil {
		return nil, err
	}
	b := &bare{h2: h2, url: "https://" + ln.Addr().String(), caBundle: caPEM, calls: map[string]*atomicCounter{}}
	mux := http.NewServeMux()
	for _, p := range barePaths {
		c := &atomicCounter{}
		b.calls[p] = c
		mux.Handle(p, answers(c, nil))
	}
	b.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			b.http2.Add(1)
		}
		mux.ServeHTTP(w, r)
	})}
	go b.srv.Serve(ln) //nolint:errcheck // stopped by close
	return b, nil
}

func (b *bare) close() { _ = b.srv.Close() }

func (b *bare) total() int64 {
	var n int64
	for _, c := range b.calls {
		n += c.Load()
	}
	return n
}

// names of the bare configurations: sorted as the observers' are.
func (b *bare) names(round int) (first, last, validating string) {
	p := "http1"
	if b.h2 {
		p = "h2"
	}
	return fmt.Sprintf("0--bench-bare-first-%s-%d", p, round), fmt.Sprintf("zzzzzzzz-bench-bare-last-%s-%d", p, round), fmt.Sprintf("bench-bare-validating-%s-%d", p, round)
}

// register writes the three configurations, scoped to ns as the session's
// scope scopes the observers, and waits until the apiserver calls all three.
func (b *bare) register(ctx context.Context, cs kubernetes.Interface, ns string, round int) error {
	first, last, validating := b.names(round)
	ignore, none, equivalent := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.Equivalent
	never, ifNeeded := admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.IfNeededReinvocationPolicy
	timeout := int32(2)
	rules := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}
	scope := &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
	cc := func(path string) admissionregistrationv1.WebhookClientConfig {
		u := b.url + path
		return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: b.caBundle}
	}
	mutating := func(name, path string, reinv *admissionregistrationv1.ReinvocationPolicyType) *admissionregistrationv1.MutatingWebhookConfiguration {
		return &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: path[1:] + ".bare.bench", ClientConfig: cc(path), Rules: rules,
				FailurePolicy: &ignore, SideEffects: &none, MatchPolicy: &equivalent, TimeoutSeconds: &timeout, NamespaceSelector: scope,
				ReinvocationPolicy: reinv, AdmissionReviewVersions: []string{"v1"}}}}
	}
	reg := cs.AdmissionregistrationV1()
	for _, m := range []*admissionregistrationv1.MutatingWebhookConfiguration{mutating(first, "/first", &never), mutating(last, "/last", &ifNeeded)} {
		if _, err := reg.MutatingWebhookConfigurations().Create(ctx, m, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create %s: %w", m.Name, err)
		}
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: validating},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "validating.bare.bench", ClientConfig: cc("/validating"), Rules: rules,
			FailurePolicy: &ignore, SideEffects: &none, MatchPolicy: &equivalent, TimeoutSeconds: &timeout, NamespaceSelector: scope,
			AdmissionReviewVersions: []string{"v1"}}}}
	if _, err := reg.ValidatingWebhookConfigurations().Create(ctx, v, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create %s: %w", v.Name, err)
	}
	return waitFor(ctx, cs, ns, func() bool {
		for _, c := range b.calls {
			if c.Load() == 0 {
				return false
			}
		}
		return true
	}, "the apiserver calls all three bare webhooks")
}

// unregister removes the three configurations and waits until a create
// calls none of them.
func (b *bare) unregister(ctx context.Context, cs kubernetes.Interface, ns string, round int) error {
	first, last, validating := b.names(round)
	reg := cs.AdmissionregistrationV1()
	for _, name := range []string{first, last} {
		if err := reg.MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("delete %s: %w", name, err)
		}
	}
	if err := reg.ValidatingWebhookConfigurations().Delete(ctx, validating, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete %s: %w", validating, err)
	}
	var before int64 = -1
	return waitFor(ctx, cs, ns, func() bool {
		now := b.total()
		quiet := now == before
		before = now
		return quiet
	}, "a create calls no bare webhook")
}

// waitFor makes dry-run creates in ns until done says so, for up to 30 s.
func waitFor(ctx context.Context, cs kubernetes.Interface, ns string, done func() bool, what string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := creates(ctx, cs, ns, 1); err != nil {
			return err
		}
		if done() {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("not within 30 s: %s", what)
}
