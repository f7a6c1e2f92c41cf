package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crconversion "sigs.k8s.io/controller-runtime/pkg/conversion"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/hookback/hookback/conversion/roundtrip"
	"github.com/hookback/hookback/upstream"
)

// roundTrips is what one op of BenchmarkConversionFuzz does: 1,000
// conversion round trips (500 objects per served version of a
// two-version CRD, each to the other version and back: 2,000
// ConversionReviews).
const roundTrips = 1000

// fuzzConcurrency is the fuzzer's default, used by both legs.
const fuzzConcurrency = 4

// BenchmarkConversionFuzz measures `hookback test --conversion-fuzz`'s
// round trips against controller-runtime's conversion webhook
// (conversion.NewWebhookHandler, the handler a kubebuilder manager serves
// at /convert) over loopback TLS, with e2e/crmanager's Widget (v1 the hub,
// v2 a spoke):
//
//   - fuzzer: roundtrip.Run, 500 objects per version made from the CRD's
//     schemas, each round trip through upstream.Converter (hookback's
//     answer checks) and compared field by field;
//   - direct: the reference, a bare client sending the same number of
//     ConversionReviews there and back with the same concurrency, reading
//     each answer and checking nothing.
//
// One op is 1,000 round trips; docs/performance.md reports s/op.
func BenchmarkConversionFuzz(b *testing.B) {
	srv := httptest.NewTLSServer(crwebhook.NewWebhookHandler(widgetScheme(b), crwebhook.NewRegistry()))
	defer srv.Close()
	crds, err := roundtrip.ReadCRDs("../e2e/crmanager/config/crd/bases/e2e.hookback.dev_widgets.yaml")
	if err != nil {
		b.Fatal(err)
	}
	base, _ := url.Parse(srv.URL)
	conv, err := upstream.NewConverter(upstream.Options{Base: base, Insecure: true}, "/convert")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fuzzer", func(b *testing.B) {
		for b.Loop() {
			rep, err := roundtrip.Run(context.Background(), roundtrip.Options{CRD: crds[0], Converter: conv, N: roundTrips / 2, Seed: 1, Concurrency: fuzzConcurrency})
			if err != nil || rep.RoundTrips != roundTrips || !rep.Clean() {
				b.Fatalf("%v: %d round trips, losses %+v, failures %+v", err, rep.RoundTrips, rep.Losses, rep.Failures)
			}
		}
	})
	client := srv.Client()
	client.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // loopback bench
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = fuzzConcurrency
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			directRoundTrips(b, client, srv.URL+"/convert")
		}
	})
}

// directRoundTrips sends roundTrips widgets to v2 and back, as bare
// ConversionReviews, fuzzConcurrency at a time.
func directRoundTrips(b *testing.B, client *http.Client, url string) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range fuzzConcurrency {
		wg.Go(func() {
			for i := range next {
				obj := json.RawMessage(fmt.Sprintf(`{"apiVersion":"e2e.hookback.dev/v1","kind":"Widget","metadata":{"name":"w-%d","namespace":"default","uid":"00000000-0000-4000-8000-%012d"},"spec":{"size":%d,"color":"red"}}`, i, i, i%10))
				there := convertDirect(b, client, url, obj, "e2e.hookback.dev/v2")
				convertDirect(b, client, url, there, "e2e.hookback.dev/v1")
			}
		})
	}
	for i := range roundTrips {
		next <- i
	}
	close(next)
	wg.Wait()
}

func convertDirect(b *testing.B, client *http.Client, url string, obj json.RawMessage, to string) json.RawMessage {
	body, _ := json.Marshal(map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
		"request": map[string]any{"uid": "bench", "desiredAPIVersion": to, "objects": []json.RawMessage{obj}}})
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Error(err)
		return nil
	}
	defer resp.Body.Close()
	var answer struct {
		Response struct {
			ConvertedObjects []json.RawMessage `json:"convertedObjects"`
		} `json:"response"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&answer); err != nil || len(answer.Response.ConvertedObjects) != 1 {
		b.Errorf("status %d: %v", resp.StatusCode, err)
		return nil
	}
	return answer.Response.ConvertedObjects[0]
}

// The Widget API of e2e/crmanager (its own module, so not imported):
// v1 the hub, v2 a spoke whose count is v1's size.
var (
	widgetV1 = schema.GroupVersion{Group: "e2e.hookback.dev", Version: "v1"}
	widgetV2 = schema.GroupVersion{Group: "e2e.hookback.dev", Version: "v2"}
)

type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Size  int32  `json:"size,omitempty"`
		Color string `json:"color,omitempty"`
	} `json:"spec,omitempty"`
}

type widgetSpoke struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Count int32  `json:"count,omitempty"`
		Color string `json:"color,omitempty"`
	} `json:"spec,omitempty"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func (w *widgetSpoke) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func (*widget) Hub() {}

func (w *widgetSpoke) ConvertTo(dst crconversion.Hub) error {
	h := dst.(*widget)
	h.ObjectMeta = w.ObjectMeta
	h.Spec.Size, h.Spec.Color = w.Spec.Count, w.Spec.Color
	return nil
}

func (w *widgetSpoke) ConvertFrom(src crconversion.Hub) error {
	h := src.(*widget)
	w.ObjectMeta = h.ObjectMeta
	w.Spec.Count, w.Spec.Color = h.Spec.Size, h.Spec.Color
	return nil
}

func widgetScheme(b *testing.B) *runtime.Scheme {
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(widgetV1.WithKind("Widget"), &widget{})
	s.AddKnownTypeWithName(widgetV2.WithKind("Widget"), &widgetSpoke{})
	metav1.AddToGroupVersion(s, widgetV1)
	metav1.AddToGroupVersion(s, widgetV2)
	return s
}
