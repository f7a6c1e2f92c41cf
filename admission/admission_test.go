package admission

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "admission", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPatchedNoOpsIsPlainAllow(t *testing.T) {
	if r := Patched(""); !r.Allowed || r.Patch != nil {
		t.Errorf("Patched() = %+v, want allowed without patch", r)
	}
}

// A base Response extended per request keeps each request's warnings its
// own (append into shared spare capacity would not).
func TestWithWarningsDoesNotShare(t *testing.T) {
	base := Allowed("").WithWarnings("a", "b", "c").WithWarnings("d")
	one, two := base.WithWarnings("for one"), base.WithWarnings("for two")
	if got := strings.Join(one.Warnings, ","); got != "a,b,c,d,for one" {
		t.Errorf("first: %s", got)
	}
	if got := strings.Join(two.Warnings, ","); got != "a,b,c,d,for two" {
		t.Errorf("second: %s", got)
	}
	if got := strings.Join(base.Warnings, ","); got != "a,b,c,d" {
		t.Errorf("base changed: %s", got)
	}
}

// NewRequest builds a Request from a review a program holds (an audit, a
// replay): its Review is those bytes, for as long as the Request lives.
func TestNewRequest(t *testing.T) {
	for _, name := range []string{"pod-create.v1.json", "pod-create.v1beta1.json"} {
		t.Run(name, func(t *testing.T) {
			body := fixture(t, name)
			req, err := NewRequest(body)
			if err != nil {
				t.Fatal(err)
			}
			if req.UID == "" || req.ReviewVersion == "" || string(req.Review()) != string(body) {
				t.Errorf("request uid %q version %q, review kept: %v", req.UID, req.ReviewVersion, string(req.Review()) == string(body))
			}
			ReportWait(context.Background(), time.Second) // no transport to tell: ignored
		})
	}
	if _, err := NewRequest([]byte(`{"apiVersion":"v1","kind":"Pod"}`)); err == nil {
		t.Error("a Pod decoded as a review")
	}
}
