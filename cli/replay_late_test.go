package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookback/hookback/record"
)

// TestReplayLateWithoutAnswer: hookback replay --upstream reads the record
// a stopping hookback leaves for a late review whose answer never came
// (marked late, no answer), sends the review again, and reports the answer
// it now gets as a change from none.
func TestReplayLateWithoutAnswer(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rv struct {
			APIVersion string `json:"apiVersion"`
			Request    struct{ UID string }
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&rv); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": rv.APIVersion, "kind": "AdmissionReview",
			"response": map[string]any{"uid": rv.Request.UID, "allowed": false, "status": map[string]any{"code": 403, "message": "now it says no"}}})
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	rec, err := record.NewRecorder(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","name":"stuck","namespace":"team-a",` +
		`"operation":"CREATE","kind":{"group":"","version":"v1","kind":"ConfigMap"},"resource":{"group":"","version":"v1","resource":"configmaps"},` +
		`"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"stuck","namespace":"team-a"}}}}`
	rec.RecordLate("vcm.example.com", "/vcm", []byte(review), nil, "no answer: hookback stopped 3s after the review was sent, before your webhook answered")
	files, _ := filepath.Glob(filepath.Join(dir, "*_late.json"))
	if len(files) != 1 {
		t.Fatalf("%d late records, want 1", len(files))
	}
	out, _, err := run(t, "replay", "--upstream", up.URL, files[0])
	if err == nil || !strings.Contains(err.Error(), "1 of 1 answers changed") {
		t.Fatalf("replay: %v, want the one answer changed (from none)\n%s", err, out)
	}
	if !strings.Contains(out, "changed  "+files[0]+": answer none -> ") || !strings.Contains(out, "now it says no") {
		t.Errorf("replay output:\n%s", out)
	}
}
