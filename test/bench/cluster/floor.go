package main

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hookback/hookback/bench/internal/loopcert"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/builtin/webhooks"
	admissionreviewv1 "k8s.io/api/admission/v1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
)

// floorWebhook is the cheapest webhook there can be, to tell the apiserver's
// share of a webhook call from hookback's: an HTTPS server that reads the
// review, echoes its UID and allows, registered for pod CREATEs in one
// namespace. The mutating floor also registers two mutating webhooks
// answering, call for call, the precomputed patches pod-lifespan and
// pod-sidecar send for the bench pod. It runs either inside the bench's
// process or, like hookback, as a process of its own (floorproc.go).
type floorWebhook struct {
	name    string
	domain  string // its webhooks' names end in it
	patches bool
	local   *floorCounter // in the bench's process
	srv     *http.Server
	proc    *floorProcess // in its own process
}

// floorHandler answers every review: the allow-all, or the precomputed
// patch registered for the request's path.
// The counter's sum is the time per call as hookback's histogram measures
// it: from the request's headers to the decision, the body's read included.
func floorHandler(patches map[string][]byte, c *floorCounter) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var review struct {
			APIVersion string `json:"apiVersion"`
			Request    struct {
				UID types.UID `json:"uid"`
			} `json:"request"`
		}
		if err := json.Unmarshal(body, &review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.calls.Add(1)
		c.nanos.Add(int64(time.Since(start)))
		w.Header().Set("Content-Type", "application/json")
		if patch, ok := patches[r.URL.Path]; ok {
			fmt.Fprintf(w, `{"apiVersion":%q,"kind":"AdmissionReview","response":{"uid":%q,"allowed":true,"patchType":"JSONPatch","patch":%q}}`,
				review.APIVersion, review.Request.UID, base64.StdEncoding.EncodeToString(patch))
			return
		}
		fmt.Fprintf(w, `{"apiVersion":%q,"kind":"AdmissionReview","response":{"uid":%q,"allowed":true}}`, review.APIVersion, review.Request.UID)
	})
	// The bench reads an own-process floor's count here.
	mux.HandleFunc("GET /calls", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, c.calls.Load(), c.nanos.Load())
	})
	return mux
}

// floorCounter counts a floor's calls and the time they took.
type floorCounter struct{ calls, nanos atomic.Int64 }

// serveFloor serves h over TLS on a loopback port until srv is closed; it
// returns the server, its address and the PEM certificate to trust.
func serveFloor(h http.Handler) (*http.Server, string, []byte, error) {
	cert, err := loopcert.New("hookback-bench-floor")
	if err != nil {
		return nil, "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, TLSConfig: &tls.Config{
		Certificates: []tls.Certificate{cert.TLS()},
		NextProtos:   []string{"h2", "http/1.1"},
	}}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	return srv, ln.Addr().String(), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.DER}), nil
}

// Its webhooks are named floor.DOMAIN (validating) and
// pod-lifespan.floor.DOMAIN, pod-sidecar.floor.DOMAIN (mutating).
func (e *env) startFloor(ctx context.Context, namespace, domain string, mutating, ownProcess bool) (*floorWebhook, error) {
	f := &floorWebhook{name: "hookback-bench-floor-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 36), patches: mutating, domain: domain}
	var addr string
	var ca []byte
	if ownProcess {
		p, err := startFloorProcess(namespace, mutating)
		if err != nil {
			return nil, err
		}
		f.proc, addr, ca = p, p.addr, p.ca
	} else {
		var patches map[string][]byte
		if mutating {
			var err error
			if patches, err = builtinPatches(namespace); err != nil {
				return nil, err
			}
		}
		f.local = new(floorCounter)
		srv, a, c, err := serveFloor(floorHandler(patches, f.local))
		if err != nil {
			return nil, err
		}
		f.srv, addr, ca = srv, a, c
	}
	none, fail, timeout := admissionv1.SideEffectClassNone, admissionv1.Fail, int32(5)
	url := "https://" + addr + "/validate"
	_, err := e.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: f.name, Labels: map[string]string{benchLabel: "true"}},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name:              "floor." + f.domain,
			ClientConfig:      admissionv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules:             podCreates(),
			NamespaceSelector: inNamespace(namespace),
			// Fail, not Ignore: a call that does not reach it must show.
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		f.close()
		return nil, err
	}
	if mutating {
		if err := f.registerMutating(ctx, e, "https://"+addr, ca, namespace); err != nil {
			_ = f.stop(ctx, e)
			return nil, err
		}
	}
	return f, nil
}

// calls is how many reviews the floor has answered, and their time.
func (f *floorWebhook) calls() (int64, time.Duration, error) {
	if f.proc != nil {
		return f.proc.calls()
	}
	return f.local.calls.Load(), time.Duration(f.local.nanos.Load()), nil
}

// registerMutating registers the two mutating floor webhooks, in the order
// and with the reinvocation policy of the shipped template.
func (f *floorWebhook) registerMutating(ctx context.Context, e *env, base string, ca []byte, namespace string) error {
	none, fail, timeout, never := admissionv1.SideEffectClassNone, admissionv1.Fail, int32(5), admissionv1.NeverReinvocationPolicy
	var hooks []admissionv1.MutatingWebhook
	for _, path := range []string{"/mutate-pod-lifespan", "/mutate-pod-sidecar"} {
		url := base + path
		hooks = append(hooks, admissionv1.MutatingWebhook{
			Name:                    strings.TrimPrefix(path, "/mutate-") + ".floor." + f.domain,
			ClientConfig:            admissionv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules:                   podCreates(),
			NamespaceSelector:       inNamespace(namespace),
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			ReinvocationPolicy:      &never,
			AdmissionReviewVersions: []string{"v1"},
		})
	}
	_, err := e.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: f.name, Labels: map[string]string{benchLabel: "true"}},
		Webhooks:   hooks,
	}, metav1.CreateOptions{})
	return err
}

// builtinPatches runs hookback's pod-lifespan and pod-sidecar on the bench
// pod once and keeps the patches they answer: what the mutating floor sends.
func builtinPatches(namespace string) (map[string][]byte, error) {
	raw, err := json.Marshal(benchPod(namespace, "floor", 0, podOptions{hookbackMarkers: true}))
	if err != nil {
		return nil, err
	}
	discard := func(string) events.EventRecorder { return &events.FakeRecorder{} }
	hooks, err := webhooks.Build([]string{webhooks.NamePodLifespan, webhooks.NamePodSidecar}, webhooks.DefaultOptions(), webhooks.Deps{Recorder: discard})
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, h := range hooks {
		resp := h.Handler.Handle(context.Background(), admission.Request{AdmissionRequest: admissionreviewv1.AdmissionRequest{
			UID: "floor", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: namespace, Operation: admissionreviewv1.Create, Object: runtime.RawExtension{Raw: raw},
		}})
		if !resp.Allowed || len(resp.Patch) == 0 {
			return nil, fmt.Errorf("%s did not patch the bench pod: %+v", h.Name, resp.Result)
		}
		out[h.Path] = resp.Patch
	}
	return out, nil
}

// stop deletes the configurations first, then stops serving.
func (f *floorWebhook) stop(ctx context.Context, e *env) error {
	err := e.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, f.name, metav1.DeleteOptions{})
	if f.patches {
		if merr := e.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, f.name, metav1.DeleteOptions{}); err == nil {
			err = merr
		}
	}
	f.close()
	return err
}

func (f *floorWebhook) close() {
	if f.srv != nil {
		_ = f.srv.Close()
	}
	if f.proc != nil {
		f.proc.stop()
	}
}

// podCreates selects pod CREATEs.
func podCreates() []admissionv1.RuleWithOperations {
	scope := admissionv1.NamespacedScope
	return []admissionv1.RuleWithOperations{{
		Operations: []admissionv1.OperationType{admissionv1.Create},
		Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: &scope},
	}}
}

// inNamespace selects one namespace by name.
func inNamespace(ns string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
}
