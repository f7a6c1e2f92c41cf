package session

import (
	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/record"
	"github.com/hookback/hookback/registration"
)

// newRecorder keeps reviews and answers in cfg.RecordDir, or returns nil.
func newRecorder(cfg Config) (admission.Recorder, error) {
	if cfg.RecordDir == "" {
		return nil, nil
	}
	rec, err := record.NewRecorder(cfg.RecordDir, cfg.Log)
	if err != nil {
		return nil, err
	}
	return withoutCanary{rec}, nil
}

// withoutCanary records every webhook but the canary: its reviews are
// hookback's own, and nothing a user replays.
type withoutCanary struct{ admission.Recorder }

func (w withoutCanary) Record(webhook, path string, review, answer []byte) {
	if path != registration.CanaryPath {
		w.Recorder.Record(webhook, path, review, answer)
	}
}
