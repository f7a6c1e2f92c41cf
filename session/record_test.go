package session

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hookback/hookback/internal/admissionhttp"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/registration"
)

type fakeDir struct{ got []string }

func (f *fakeDir) Record(webhook, _ string, _, _ []byte) { f.got = append(f.got, webhook) }

type fakeStore struct{ got []string }

func (f *fakeStore) RecordServed(x admissionhttp.Served) { f.got = append(f.got, x.Webhook) }

// The canary is never recorded; --record-dir gets answered calls, the
// inspector every call.
func TestSessionRecorder(t *testing.T) {
	tests := []struct {
		name      string
		served    admissionhttp.Served
		wantDir   int
		wantStore int
	}{
		{name: "answered", served: admissionhttp.Served{Webhook: "w", Path: "/w", Answer: []byte("{}")}, wantDir: 1, wantStore: 1},
		{name: "failed call", served: admissionhttp.Served{Webhook: "w", Path: "/w", Failure: "bad upstream"}, wantDir: 0, wantStore: 1},
		{name: "canary", served: admissionhttp.Served{Webhook: "canary", Path: registration.CanaryPath, Answer: []byte("{}")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, store := &fakeDir{}, &fakeStore{}
			sessionRecorder{dir: dir, store: store}.RecordServed(tt.served)
			if len(dir.got) != tt.wantDir || len(store.got) != tt.wantStore {
				t.Errorf("dir got %v, store got %v", dir.got, store.got)
			}
		})
	}
	if rec, err := newRecorder(sinks{}); rec != nil || err != nil {
		t.Errorf("no --record-dir and no inspector: recorder %v, %v; want none", rec, err)
	}
}

func TestInspectorConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     plan.InspectorConfig
		wantErr string
	}{
		{name: "disabled", cfg: plan.InspectorConfig{}},
		{name: "loopback", cfg: plan.InspectorConfig{Address: "127.0.0.1:8082", Keep: 10}},
		{name: "every interface", cfg: plan.InspectorConfig{Address: ":8082"}, wantErr: "pass plan.InspectorConfig.Expose"},
		{name: "exposed", cfg: plan.InspectorConfig{Address: "0.0.0.0:8082", Expose: true}},
		{name: "negative keep", cfg: plan.InspectorConfig{Address: "127.0.0.1:8082", Keep: -1}, wantErr: "plan.InspectorConfig.Keep -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("validate = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestPathKinds: the recordings learn which kind of configuration each
// served path answers for, from what the session registers; a mutating
// and a validating webhook of one name stay apart by their paths, and a
// path served for both kinds has none.
func TestPathKinds(t *testing.T) {
	hook := func(name, url string) any {
		return map[string]any{"name": name, "clientConfig": map[string]any{"url": url}}
	}
	config := func(kind, name string, hooks ...any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
			"metadata": map[string]any{"name": name}, "webhooks": hooks}}
	}
	var k pathKinds
	if got := k.of("/m"); got != "" {
		t.Errorf("before the first render: %q, want none", got)
	}
	k.learn([]*unstructured.Unstructured{
		config(registration.KindMutatingHook, "m-dev", hook("same.example.com", "https://h:8443/m"), hook("both", "https://h:8443/both")),
		config(registration.KindValidatingHook, "v-dev", hook("same.example.com", "https://h:8443/v"), hook("both", "https://h:8443/both")),
		config("Lease", "other"),
	})
	for path, want := range map[string]string{"/m": registration.KindMutatingHook, "/v": registration.KindValidatingHook, "/both": "", "/none": ""} {
		if got := k.of(path); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
	var none *pathKinds
	none.learn(nil)
	if got := none.of("/m"); got != "" {
		t.Errorf("no kinds: %q", got)
	}
}

type kindStore struct{ got []string }

func (k *kindStore) RecordServed(x admissionhttp.Served) { k.got = append(k.got, x.ConfigurationKind) }

// TestSessionRecorderTellsTheInspectorTheKind: the inspector's store gets
// the configuration kind of each review's path, for its case downloads.
func TestSessionRecorderTellsTheInspectorTheKind(t *testing.T) {
	k := &pathKinds{}
	k.learn([]*unstructured.Unstructured{{Object: map[string]any{"kind": registration.KindValidatingHook,
		"webhooks": []any{map[string]any{"name": "same", "clientConfig": map[string]any{"url": "https://h/v"}}}}}})
	store := &kindStore{}
	sessionRecorder{store: store, kinds: k}.RecordServed(admissionhttp.Served{Webhook: "same", Path: "/v", Answer: []byte("{}")})
	if len(store.got) != 1 || store.got[0] != registration.KindValidatingHook {
		t.Errorf("the store got kinds %q, want %s", store.got, registration.KindValidatingHook)
	}
}
