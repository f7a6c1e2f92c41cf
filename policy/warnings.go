package policy

import (
	"context"
	"sync"

	"k8s.io/apiserver/pkg/warning"
)

// warningRecorder collects the warnings a dispatch adds (Warn
// validationActions), in order, as the apiserver returns them.
type warningRecorder struct {
	mu   sync.Mutex
	list []string
}

var _ warning.Recorder = (*warningRecorder)(nil)

func (w *warningRecorder) AddWarning(_, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func withWarnings(ctx context.Context, w *warningRecorder) context.Context {
	return warning.WithWarningRecorder(ctx, w)
}
