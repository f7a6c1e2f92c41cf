package inspector

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookback/hookback/internal/admissionhttp"
)

func TestConversionShown(t *testing.T) {
	f := newFixture(t, StoreOptions{})
	review := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"c1","desiredAPIVersion":"e2e.hookback.dev/v2","objects":[` +
		`{"apiVersion":"e2e.hookback.dev/v1","kind":"Widget","metadata":{"name":"w1","namespace":"ns"},"spec":{"size":4}},` +
		`{"apiVersion":"e2e.hookback.dev/v1","kind":"Widget","metadata":{"name":"w2","namespace":"ns"},"spec":{"size":5}}]}}`
	answer := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"c1","result":{"status":"Success"},"convertedObjects":[` +
		`{"apiVersion":"e2e.hookback.dev/v2","kind":"Widget","metadata":{"name":"w1","namespace":"ns"},"spec":{"count":4}},` +
		`{"apiVersion":"e2e.hookback.dev/v2","kind":"Widget","metadata":{"name":"w2","namespace":"ns"},"spec":{"count":5}}]}}`
	f.store.RecordServed(admissionhttp.Served{Webhook: "convert/widgets.e2e.hookback.dev", Path: "/convert/widgets.e2e.hookback.dev/convert",
		Review: []byte(review), Answer: []byte(answer), Start: time.Now(), Took: time.Millisecond})
	_, list := f.get("/")
	for _, w := range []string{"CONVERT", "to e2e.hookback.dev/v2", "ns/w1 and 1 more", "converted"} {
		if !strings.Contains(list, w) {
			t.Errorf("list lacks %q", w)
		}
	}
	code, body := f.get(fmt.Sprintf("/reviews/%d", f.lastID()))
	if code != http.StatusOK {
		t.Fatalf("detail = %d", code)
	}
	for _, w := range []string{"Objects before and after the conversion", "ns/w1", "ns/w2", `&#34;size&#34;: 4`, `&#34;count&#34;: 4`, "ConversionReview sent back"} {
		if !strings.Contains(body, w) {
			t.Errorf("detail lacks %q", w)
		}
	}
	if strings.Contains(body, "No object.") {
		t.Errorf("detail says No object. for a conversion")
	}
}
