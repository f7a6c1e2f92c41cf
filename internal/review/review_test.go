package review_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/internal/review"
)

// A Request over a Body reads its review and reports its waits only until
// the Body expires; then it has no bytes, whatever the Body holds next.
func TestRequestOverBody(t *testing.T) {
	newRequest, err := review.NewRequestFunc[admission.Request]()
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(filepath.Join("..", "..", "testdata", "admission", "pod-create.v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	b := review.Get()
	defer b.Put()
	if _, err := b.ReadFrom(bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	rv, err := review.Decode(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	req := newRequest(rv, b.Ref())
	if string(req.Review()) != string(body) || req.UID != rv.Request.UID || req.ReviewVersion != "admission.k8s.io/v1" {
		t.Fatalf("request uid %q version %q, review as received: %v", req.UID, req.ReviewVersion, string(req.Review()) == string(body))
	}
	req.ReportWait(2 * time.Millisecond)
	req.ReportWait(time.Millisecond)
	b.Expire()
	req.ReportWait(time.Second) // after Handle returned: ignored
	if got := b.Waited(); got != 3*time.Millisecond {
		t.Errorf("Waited = %v, want 3ms", got)
	}
	if got := req.Review(); got != nil {
		t.Errorf("Review after Expire = %d bytes, want nil", len(got))
	}
	if string(b.Bytes()) != string(body) {
		t.Error("the Body's owner lost the bytes at Expire")
	}
	var zero review.Ref
	zero.ReportWait(time.Second)
	if zero.Bytes() != nil {
		t.Error("the zero Ref has bytes")
	}
}

// Only admission's Request type has a constructor registered.
func TestNewRequestFuncOfAnotherType(t *testing.T) {
	if _, err := review.NewRequestFunc[struct{}](); err == nil {
		t.Error("a constructor of struct{} was found")
	}
}
