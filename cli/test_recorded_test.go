package cli

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sameNameServer is a webhook server whose mutating webhook (/mutate)
// labels pods and whose validating one (/validate) denies deny-*: served
// under one name, as slackhq/simple-kubernetes-webhook serves both.
func sameNameServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review struct {
			APIVersion string `json:"apiVersion"`
			Request    struct {
				UID  string `json:"uid"`
				Name string `json:"name"`
			} `json:"request"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := map[string]any{"uid": review.Request.UID, "allowed": true}
		switch {
		case r.URL.Path == "/mutate":
			resp["patchType"] = "JSONPatch"
			resp["patch"] = base64.StdEncoding.EncodeToString([]byte(`[{"op":"add","path":"/metadata/labels","value":{"seen":"yes"}}]`))
		case strings.HasPrefix(review.Request.Name, "deny-"):
			resp["allowed"], resp["status"] = false, map[string]any{"code": 403, "message": "no to " + review.Request.Name}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": review.APIVersion, "kind": "AdmissionReview", "response": resp})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// recordedCase is a case as test init writes it from a recording.
func recordedCase(name, kind, path, expect string) string {
	return `apiVersion: hookback.dev/v1alpha1
kind: Case
name: ` + name + `
webhooks: [same.example.com]
configurationKind: ` + kind + `
path: ` + path + `
review:
  apiVersion: admission.k8s.io/v1
  kind: AdmissionReview
  request:
    uid: 00000000-0000-0000-0000-000000000000
    kind: {group: "", version: v1, kind: Pod}
    resource: {group: "", version: v1, resource: pods}
    name: deny-p
    namespace: a
    operation: CREATE
    userInfo: {username: u}
    object: {apiVersion: v1, kind: Pod, metadata: {name: deny-p, namespace: a}, spec: {containers: [{name: c, image: i}]}}
expect: ` + expect + "\n"
}

func writeCases(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRecordedCasesNeedOnlyTheUpstream: the cases test init writes from a
// mutating and a validating webhook of one name run with --upstream alone,
// each against the webhook it came from; a case that must be matched
// says which flag is missing, by its flag name, and so do the library's
// errors on every path out of test (no Go field name reaches the user).
func TestRecordedCasesNeedOnlyTheUpstream(t *testing.T) {
	up := sameNameServer(t)
	recorded := map[string]string{
		"m.yaml": recordedCase("from-mutating", "MutatingWebhookConfiguration", "/upstream/svc/system/webhook-service/443/mutate",
			`{result: patched, object: {apiVersion: v1, kind: Pod, metadata: {name: deny-p, namespace: a, labels: {seen: "yes"}}, spec: {containers: [{name: c, image: i}]}}}`),
		"v.yaml": recordedCase("from-validating", "ValidatingWebhookConfiguration", "/upstream/svc/system/webhook-service/443/validate",
			`{result: denied, code: 403, message: no to deny-p}`),
	}
	manifestCase := "apiVersion: hookback.dev/v1alpha1\nkind: Suite\ncases:\n- name: to-match\n  operation: CREATE\n" +
		"  object: {apiVersion: v1, kind: Pod, metadata: {name: p, namespace: a}}\n  expect: {result: allowed}\n"
	tests := []struct {
		name     string
		files    map[string]string
		args     []string
		wantExit string
		want     []string
	}{
		{name: "recorded cases", files: recorded, want: []string{"2 results: 2 passed, 0 failed, 0 errors"}},
		{name: "a case to match", files: map[string]string{"s.yaml": manifestCase}, wantExit: "exit 2",
			want: []string{"pass --webhook-config (a recorded case needs none)"}},
		{name: "a library error on the way", files: recorded, args: []string{"--timeout", "50s"}, wantExit: "exit 2",
			want: []string{"--timeout 50s: want 1s to 30s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"test", "--webhooks", "none", "--upstream", up, writeCases(t, tt.files)}, tt.args...)
			out, errOut, err := run(t, args...)
			all := out + errOut
			switch {
			case tt.wantExit == "" && err != nil:
				t.Fatalf("%v\n%s", err, all)
			case tt.wantExit != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantExit)):
				t.Fatalf("err %v, want %s\n%s", err, tt.wantExit, all)
			}
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
			for _, field := range []string{"session.", "suite.", "UserWebhooks"} {
				if strings.Contains(all, field) {
					t.Errorf("a library field name (%s) reaches the user:\n%s", field, all)
				}
			}
		})
	}
}
