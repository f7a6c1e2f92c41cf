package inspector

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/hookback/hookback/internal/admissionhttp"
	"github.com/hookback/hookback/suite"
)

// TestDownloadAsCaseIsWhatTestRuns: the review page's "Download as a test
// case" button serves a case file that hookback test loads and passes
// against the same handler.
func TestDownloadAsCaseIsWhatTestRuns(t *testing.T) {
	f := newFixture(t, StoreOptions{})
	fill(f)
	if _, page := f.get("/reviews/2"); !strings.Contains(page, `href="/reviews/2/case.yaml" download>Download as a test case`) {
		t.Fatalf("the review page has no case button:\n%s", page)
	}
	resp, err := http.Get(f.http.URL + "/reviews/2/case.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	cd := resp.Header.Get("Content-Disposition")
	if resp.StatusCode != http.StatusOK || !strings.Contains(cd, "attachment") || !strings.Contains(cd, ".yaml") {
		t.Fatalf("case.yaml: %d %q\n%s", resp.StatusCode, cd, body)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "case.yaml"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := suite.Load([]string{dir})
	if err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	w := &suite.Webhook{Configuration: "c", Path: testHook.Path, Handler: testHook.Handler,
		Mutating: &admissionregistrationv1.MutatingWebhook{Name: testHook.Name}}
	rows := suite.Run(context.Background(), files, suite.Options{Webhooks: []*suite.Webhook{w}})
	if len(rows) != 1 || rows[0].Status != suite.Pass {
		t.Errorf("rows %+v\n%s", rows, body)
	}
}

// TestDownloadedCaseNamesItsKind: a review served for a validating
// webhook downloads as a case that names that kind and the path, as test
// init writes it, so it runs that webhook and not a mutating one of the
// same name.
func TestDownloadedCaseNamesItsKind(t *testing.T) {
	f := newFixture(t, StoreOptions{})
	answer := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true}}`)
	f.store.RecordServed(admissionhttp.Served{Webhook: "same.example.com", Path: "/v", ConfigurationKind: suite.ValidatingWebhookConfiguration,
		Review: podReview("u-1", "team-a", "p"), Answer: answer, Start: time.Now()})
	code, body := f.get("/reviews/1/case.yaml")
	if code != http.StatusOK {
		t.Fatalf("case.yaml: %d\n%s", code, body)
	}
	for _, want := range []string{"webhooks:\n- same.example.com\nconfigurationKind: ValidatingWebhookConfiguration\npath: /v\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("the case lacks %q:\n%s", want, body)
		}
	}
}
