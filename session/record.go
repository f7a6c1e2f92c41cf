package session

import (
	"log/slog"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/internal/admissionhttp"
	"github.com/hookback/hookback/record"
	"github.com/hookback/hookback/registration"
)

// sinks are where a run's reports go (reviews, late answers, shadow
// differences, chain views, policy evaluations): its log, --record-dir
// ("" for none) and the inspector's store (nil when the inspector is off).
// The reports take these, not the whole Options.
type sinks struct {
	log       *slog.Logger
	recordDir string
	store     *inspector.Store
	// kinds name the configuration kind of each served path, for the
	// recordings.
	kinds *pathKinds
}

// dir is the --record-dir recorder, which writes each recording with the
// configuration kind of its path; nil without --record-dir.
func (s sinks) dir() (*record.Recorder, error) {
	if s.recordDir == "" {
		return nil, nil
	}
	dir, err := record.NewRecorder(s.recordDir, s.log)
	if err != nil {
		return nil, err
	}
	return dir.WithKinds(s.kinds.of), nil
}

// pathKinds knows, from the configurations the session registers, which
// kind of configuration declares the webhooks served at each path: a
// recording keeps it, so that `hookback test` runs the mutating or the
// validating webhook the review came from when both share a name. The
// loop sets it at each render, before anything is registered.
type pathKinds struct {
	m atomic.Pointer[map[string]string]
}

// learn reads the kinds of the paths of objs; a path served for both
// kinds has none.
func (k *pathKinds) learn(objs []*unstructured.Unstructured) {
	if k == nil {
		return
	}
	m := map[string]string{}
	for _, o := range objs {
		kind := o.GetKind()
		if kind != registration.KindMutatingHook && kind != registration.KindValidatingHook {
			continue
		}
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for _, h := range hooks {
			hm, _ := h.(map[string]any)
			path := hookPath(hm)
			if prev, seen := m[path]; path == "" || seen && prev != kind {
				m[path] = ""
				continue
			}
			m[path] = kind
		}
	}
	k.m.Store(&m)
}

// of is the kind of the configuration of path, "" when unknown or both.
func (k *pathKinds) of(path string) string {
	if k == nil {
		return ""
	}
	m := k.m.Load()
	if m == nil {
		return ""
	}
	return (*m)[path]
}

// newRecorder composes what keeps reviews and answers: files in the record
// directory and the inspector's store. It returns nil when neither is on.
func newRecorder(s sinks) (admissionhttp.Recorder, error) {
	rec := sessionRecorder{kinds: s.kinds}
	store := s.store
	dir, err := s.dir()
	if err != nil {
		return nil, err
	}
	if dir != nil {
		rec.dir = dir
	}
	if store != nil {
		rec.store = store
	}
	if rec.dir == nil && rec.store == nil {
		return nil, nil
	}
	return rec, nil
}

// sessionRecorder records every webhook but the canary (its reviews are
// hookback's own, and nothing a user replays) into the --record-dir files
// (answered calls) and the inspector (every call, with its timing).
type sessionRecorder struct {
	dir   admissionhttp.Recorder
	store admissionhttp.ServedRecorder
	// kinds name the configuration kind of each path, for the inspector's
	// downloads (the record directory's recorder has them too).
	kinds *pathKinds
}

var (
	_ admissionhttp.Recorder       = sessionRecorder{}
	_ admissionhttp.ServedRecorder = sessionRecorder{}
)

// Record implements admissionhttp.Recorder.
func (s sessionRecorder) Record(webhook, path string, review, answer []byte) {
	s.RecordServed(admissionhttp.Served{Webhook: webhook, Path: path, Review: review, Answer: answer})
}

// RecordServed implements admissionhttp.ServedRecorder.
func (s sessionRecorder) RecordServed(x admissionhttp.Served) {
	if x.Path == registration.CanaryPath {
		return
	}
	if s.dir != nil && x.Answer != nil {
		s.dir.Record(x.Webhook, x.Path, x.Review, x.Answer)
	}
	if s.store != nil {
		if x.ConfigurationKind == "" {
			x.ConfigurationKind = s.kinds.of(x.Path)
		}
		s.store.RecordServed(x)
	}
}
