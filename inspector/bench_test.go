package inspector

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookback/hookback/internal/admissionhttp"
)

// BenchmarkRecordServed is the inspector's whole cost on the admission
// path: a review and its answer copied into the ring (no page open).
func BenchmarkRecordServed(b *testing.B) {
	answer := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","allowed":true,"status":{"metadata":{},"code":200},"patch":"W3sib3AiOiJhZGQiLCJwYXRoIjoiL21ldGFkYXRhL2xhYmVscyIsInZhbHVlIjp7InNlZW4iOiJ5ZXMifX1d","patchType":"JSONPatch"}}`)
	for _, fx := range []string{"pod-create.v1.json", "pod-large.v1.json"} {
		review, err := os.ReadFile(filepath.Join("..", "testdata", "admission", fx))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fx, func(b *testing.B) {
			s := NewStore(StoreOptions{})
			x := admissionhttp.Served{Webhook: "bench", Path: "/bench", Review: review, Answer: answer, Start: time.Now(), Took: time.Millisecond}
			b.ReportAllocs()
			b.SetBytes(int64(len(review) + len(answer)))
			for b.Loop() {
				s.RecordServed(x)
			}
		})
	}
}
