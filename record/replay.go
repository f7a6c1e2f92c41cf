package record

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// Target returns the handler that answers an entry again, served through
// hookback's transport (a built-in, or a forwarder to an upstream).
type Target func(e Entry) (http.Handler, error)

// Replay sends every entry's review to target and prints, per file, "same"
// or what changed against the recorded answer (allowed, message, patch). It
// returns how many changed. Recorded Secrets were redacted, so what is
// replayed is the redacted review.
func Replay(ctx context.Context, entries []NamedEntry, target Target, w io.Writer) (changed int, err error) {
	for _, e := range entries {
		_, diffs, err := ReplayOne(ctx, e.Entry, target)
		if err != nil {
			return changed, fmt.Errorf("%s: %w", e.File, err)
		}
		if len(diffs) == 0 {
			fmt.Fprintf(w, "same     %s\n", e.File)
			continue
		}
		changed++
		fmt.Fprintf(w, "changed  %s: %s\n", e.File, strings.Join(diffs, "; "))
	}
	return changed, nil
}

// ReplayOne sends e's review to target and returns the new answer and what
// changed against the recorded one (Compare); an entry without a recorded
// answer (the call had failed) compares as "answer none -> ...".
func ReplayOne(ctx context.Context, e Entry, target Target) (answer []byte, diffs []string, err error) {
	h, err := target(e)
	if err != nil {
		return nil, nil, err
	}
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, e.Path, bytes.NewReader(e.Review))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return nil, nil, fmt.Errorf("the review was refused (HTTP %d): %s", rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	if len(e.Answer) == 0 || string(bytes.TrimSpace(e.Answer)) == "null" {
		return rec.Body.Bytes(), []string{"answer none -> " + strings.TrimSpace(rec.Body.String())}, nil
	}
	diffs, err = Compare(e.Answer, rec.Body.Bytes())
	if err != nil {
		return nil, nil, err
	}
	return rec.Body.Bytes(), diffs, nil
}

// answer is what Compare looks at in an AdmissionReview answer.
type answer struct {
	Response struct {
		Allowed bool `json:"allowed"`
		Status  struct {
			Message string `json:"message"`
		} `json:"status"`
		Patch []byte `json:"patch"`
	} `json:"response"`
}

// Compare lists the differences between a recorded and a new answer:
// allowed, the status message, and the patch (as JSON, operation order
// significant).
func Compare(recorded, now []byte) ([]string, error) {
	if isConversion(recorded) {
		return compareConversion(recorded, now)
	}
	var a, b answer
	if err := json.Unmarshal(recorded, &a); err != nil {
		return nil, fmt.Errorf("decode recorded answer: %w", err)
	}
	if err := json.Unmarshal(now, &b); err != nil {
		return nil, fmt.Errorf("decode new answer: %w", err)
	}
	var diffs []string
	if a.Response.Allowed != b.Response.Allowed {
		diffs = append(diffs, fmt.Sprintf("allowed %v -> %v", a.Response.Allowed, b.Response.Allowed))
	}
	if a.Response.Status.Message != b.Response.Status.Message {
		diffs = append(diffs, fmt.Sprintf("message %q -> %q", a.Response.Status.Message, b.Response.Status.Message))
	}
	if !samePatch(a.Response.Patch, b.Response.Patch) {
		diffs = append(diffs, fmt.Sprintf("patch %s -> %s", orNone(a.Response.Patch), orNone(b.Response.Patch)))
	}
	return diffs, nil
}

func samePatch(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	return jsonpatch.Equal(a, b)
}

func orNone(p []byte) string {
	if len(p) == 0 {
		return "none"
	}
	return string(p)
}
