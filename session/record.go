package session

import (
	"log/slog"

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
}

// newRecorder composes what keeps reviews and answers: files in the record
// directory and the inspector's store. It returns nil when neither is on.
func newRecorder(s sinks) (admissionhttp.Recorder, error) {
	rec := sessionRecorder{}
	store := s.store
	if s.recordDir != "" {
		dir, err := record.NewRecorder(s.recordDir, s.log)
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
	dir   admissionhttp.Recorder
	store admissionhttp.ServedRecorder
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
		s.store.RecordServed(x)
	}
}
