package record

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		name, review string
		gone, kept   []string
	}{
		{name: "secret in object and oldObject",
			review: `{"request":{"object":{"apiVersion":"v1","kind":"Secret","data":{"k":"c2VjcmV0"},"stringData":{"p":"hunter2"}},` +
				`"oldObject":{"apiVersion":"v1","kind":"Secret","data":{"k":"b2xk"}}}}`,
			gone: []string{"c2VjcmV0", "hunter2", "b2xk"}, kept: []string{`"k":"` + Redacted, `"p":"` + Redacted}},
		{name: "kubectl apply's copy of a secret",
			review: `{"request":{"object":{"kind":"Secret","metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":` +
				`"{\"stringData\":{\"p\":\"hunter2\"}}","other":"kept"}},"data":{"p":"aHVudGVyMg=="}}}}`,
			gone: []string{"hunter2", "aHVudGVyMg=="}, kept: []string{`\"p\":\"` + Redacted, `"other":"kept"`}},
		{name: "a configmap is left alone", review: `{"request":{"object":{"apiVersion":"v1","kind":"ConfigMap","data":{"k":"visible"}}}}`,
			kept: []string{`"k":"visible"`}},
		{name: "kubectl apply's copy of the secret",
			review: `{"request":{"object":{"apiVersion":"v1","kind":"Secret","data":{"k":"c2VjcmV0"},"metadata":{"annotations":{` +
				`"kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"data\":{\"k\":\"c2VjcmV0\"},\"stringData\":{\"p\":\"hunter2\"}}\n","team":"a"}}}}}`,
			gone: []string{"c2VjcmV0", "hunter2"}, kept: []string{`\"k\":\"` + Redacted, `"team":"a"`}},
		{name: "an unparsable copy goes whole",
			review: `{"request":{"object":{"apiVersion":"v1","kind":"Secret","metadata":{"annotations":{` +
				`"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"k\":\"c2VjcmV0\"}"}}}}}`,
			gone: []string{"c2VjcmV0"}, kept: []string{`"kubectl.kubernetes.io/last-applied-configuration":"` + Redacted}},
		{name: "a secret without data", review: `{"request":{"object":{"apiVersion":"v1","kind":"Secret","type":"Opaque"}}}`,
			kept: []string{`"type":"Opaque"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Redact([]byte(tc.review))
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range tc.gone {
				if bytes.Contains(got, []byte(g)) {
					t.Errorf("%s survived: %s", g, got)
				}
			}
			for _, k := range tc.kept {
				if !bytes.Contains(got, []byte(k)) {
					t.Errorf("%s missing: %s", k, got)
				}
			}
		})
	}
	if _, err := Redact([]byte("not json")); err == nil {
		t.Error("Redact of garbage: want an error")
	}
}

func TestRecorderFilesAndReplay(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	r, err := NewRecorder(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"U-1","operation":"CREATE","namespace":"Team A","name":"../../etc/passwd",` +
		`"object":{"apiVersion":"v1","kind":"Secret","stringData":{"p":"hunter2"}}}}`
	answer := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"U-1","allowed":true}}`
	r.Record("my/webhook", "/upstream/svc/ns/s/443/validate", []byte(review), []byte(answer))
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 1 {
		t.Fatalf("files %v, want one", files)
	}
	name := filepath.Base(files[0])
	if strings.ContainsAny(strings.TrimSuffix(name, ".json"), "/ A") || !strings.Contains(name, "_my-webhook_create_team-a_etc-passwd_u-1") {
		t.Errorf("unsafe or unexpected file name %q", name)
	}
	info, _ := os.Stat(files[0])
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
	if b, _ := os.ReadFile(files[0]); bytes.Contains(b, []byte("hunter2")) {
		t.Error("the recorded file holds the Secret's data")
	}
	entries, err := ReadEntries([]string{dir})
	if err != nil || len(entries) != 1 || entries[0].Path != "/upstream/svc/ns/s/443/validate" || entries[0].Webhook != "my/webhook" {
		t.Fatalf("ReadEntries = %+v, %v", entries, err)
	}
	for _, tc := range []struct {
		name, now   string
		wantChanged int
		wantText    string
	}{
		{name: "same answer", now: answer, wantText: "same"},
		{name: "denied now", now: `{"response":{"uid":"U-1","allowed":false,"status":{"message":"no"}}}`, wantChanged: 1, wantText: `allowed true -> false; message "" -> "no"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := func(Entry) (http.Handler, error) {
				return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(tc.now)) }), nil
			}
			var out bytes.Buffer
			changed, err := Replay(context.Background(), entries, target, &out)
			if err != nil || changed != tc.wantChanged || !strings.Contains(out.String(), tc.wantText) {
				t.Errorf("Replay = %d, %v, %q; want %d changed, %q", changed, err, out.String(), tc.wantChanged, tc.wantText)
			}
		})
	}
}

func TestComparePatches(t *testing.T) {
	a := `{"response":{"allowed":true,"patch":"` + "W3sib3AiOiJhZGQiLCJwYXRoIjoiL2EiLCJ2YWx1ZSI6MX1d" + `"}}`
	if d, err := Compare([]byte(a), []byte(a)); err != nil || len(d) != 0 {
		t.Errorf("same patch: %v %v", d, err)
	}
	if d, _ := Compare([]byte(a), []byte(`{"response":{"allowed":true}}`)); len(d) != 1 || !strings.Contains(d[0], "-> none") {
		t.Errorf("dropped patch: %v", d)
	}
	var v any
	if json.Unmarshal([]byte(a), &v) != nil {
		t.Fatal("bad fixture")
	}
}

// TestRecordRedactsSecretPatches: a webhook that writes a Secret's data
// must not leak it into --record-dir either.
func TestRecordRedactsSecretPatches(t *testing.T) {
	dir := t.TempDir()
	r, err := NewRecorder(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"U-2","operation":"CREATE","namespace":"a","name":"s",` +
		`"object":{"apiVersion":"v1","kind":"Secret","data":{"p":"b2xk"}}}}`
	patch := base64.StdEncoding.EncodeToString([]byte(`[{"op":"add","path":"/data/token","value":"c2VjcmV0LXRva2Vu"}]`))
	answer := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"U-2","allowed":true,"patchType":"JSONPatch","patch":"` + patch + `"}}`
	r.Record("w", "/w", []byte(review), []byte(answer))
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("files = %v", files)
	}
	b, _ := os.ReadFile(files[0])
	for _, leak := range []string{"b2xk", "c2VjcmV0LXRva2Vu", patch} {
		if strings.Contains(string(b), leak) {
			t.Errorf("recorded file holds %q: %s", leak, b)
		}
	}
}

// TestRecordsConfigurationKind: every recording (answered, late, shadow)
// names the kind of the configuration its path is served for, so that a
// mutating and a validating webhook of one name stay apart; a recording
// made before the kind was kept still reads, with none.
func TestRecordsConfigurationKind(t *testing.T) {
	kinds := map[string]string{"/m": "MutatingWebhookConfiguration", "/v": "ValidatingWebhookConfiguration"}
	review := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"U-4","operation":"CREATE","name":"p"}}`)
	answer := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"U-4","allowed":true}}`)
	tests := []struct {
		name, path, want string
		record           func(r *Recorder, path string)
	}{
		{name: "answered, mutating", path: "/m", want: "MutatingWebhookConfiguration",
			record: func(r *Recorder, path string) { r.Record("same.example.com", path, review, answer) }},
		{name: "late, validating", path: "/v", want: "ValidatingWebhookConfiguration",
			record: func(r *Recorder, path string) { r.RecordLate("same.example.com", path, review, answer, "allowed") }},
		{name: "shadow, validating", path: "/v", want: "ValidatingWebhookConfiguration",
			record: func(r *Recorder, path string) { r.RecordShadow("same.example.com", path, review, answer, "allowed") }},
		{name: "a path of no known kind", path: "/other", want: "",
			record: func(r *Recorder, path string) { r.Record("other", path, review, answer) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			r, err := NewRecorder(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			tt.record(r.WithKinds(func(path string) string { return kinds[path] }), tt.path)
			entries, err := ReadEntries([]string{dir})
			if err != nil || len(entries) != 1 {
				t.Fatalf("ReadEntries = %+v, %v", entries, err)
			}
			if e := entries[0]; e.ConfigurationKind != tt.want || e.Path != tt.path {
				t.Errorf("recorded kind %q at %q, want %q at %q", e.ConfigurationKind, e.Path, tt.want, tt.path)
			}
		})
	}
	t.Run("recorded before kinds were kept", func(t *testing.T) {
		entries, err := ReadEntries([]string{filepath.Join("testdata", "before-kinds.json")})
		if err != nil || len(entries) != 1 || entries[0].ConfigurationKind != "" || entries[0].Webhook != "vpod.example.com" {
			t.Fatalf("ReadEntries = %+v, %v", entries, err)
		}
	})
}
