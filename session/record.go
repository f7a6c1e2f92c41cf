package session

import (
	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/record"
	"github.com/hookback/hookback/registration"
)

// newRecorder composes what keeps reviews and answers: files in
// cfg.RecordDir and the inspector's store. It returns nil when neither is
// on.
func newRecorder(cfg Options, store *inspector.Store) (admission.Recorder, error) {
	rec := sessionRecorder{}
	if cfg.RecordDir != "" {
		dir, err := record.NewRecorder(cfg.RecordDir, cfg.Log)
		if err != nil {
			return nil, err
		}
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
	dir   admission.Recorder
	store admission.ServedRecorder
}

var (
	_ admission.Recorder       = sessionRecorder{}
	_ admission.ServedRecorder = sessionRecorder{}
)

// Record implements admission.Recorder.
func (s sessionRecorder) Record(webhook, path string, review, answer []byte) {
	s.RecordServed(admission.Served{Webhook: webhook, Path: path, Review: review, Answer: answer})
}

// RecordServed implements admission.ServedRecorder.
func (s sessionRecorder) RecordServed(x admission.Served) {
	if x.Path == registration.CanaryPath {
		return
	}
	if s.dir != nil && x.Answer != nil {
		s.dir.Record(x.Webhook, x.Path, x.Review, x.Answer)
	}
	if s.store != nil {
		s.store.RecordServed(x)
	}
}
