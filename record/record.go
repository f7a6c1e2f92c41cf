// Package record keeps the reviews hookback served and the answers it sent
// (start --record-dir), with Secrets' data redacted before anything is
// written, and replays them against a webhook server to show what changed
// (hookback replay --upstream): a regression check for a webhook author.
package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/internal/admissionhttp"
)

// Redacted replaces each value of a Secret's data and stringData.
const Redacted = "<redacted by hookback>"

// Entry is one recorded file.
type Entry struct {
	// Webhook and Path are the webhook that answered and where it is served.
	Webhook string `json:"webhook"`
	Path    string `json:"path"`
	// ConfigurationKind is the kind of the configuration that declares
	// the webhook served at Path, MutatingWebhookConfiguration or
	// ValidatingWebhookConfiguration: a webhook's name is unique only
	// within its configuration, and a mutating and a validating one may
	// share it. Empty in recordings made before it was kept, and where
	// webhooks of both kinds are served at one path.
	ConfigurationKind string          `json:"configurationKind,omitempty"`
	Review            json.RawMessage `json:"review"`
	// Answer is absent when none came: a late review hookback stopped
	// before its answer.
	Answer json.RawMessage `json:"answer,omitempty"`
	// Late, when set, marks an answer that came after the apiserver had
	// stopped waiting, and says what the apiserver did instead.
	Late string `json:"late,omitempty"`
	// Shadow, when set, says how this answer (your webhook's) differs from
	// the deployed webhook's (start --shadow).
	Shadow string `json:"shadow,omitempty"`
	// Chain is the admission chain view of the request (start --chain,
	// chain.View): what every other webhook and policy did around yours.
	Chain json.RawMessage `json:"chain,omitempty"`
	// Policy is start --policy's evaluation of the request, or the
	// policies beside this answer (inspector.PolicyView).
	Policy json.RawMessage `json:"policy,omitempty"`
}

// Recorder writes one file per admission into a directory.
type Recorder struct {
	dir string
	log *slog.Logger
	seq atomic.Uint64
	// kindOf, when set, names the configuration kind of a served path.
	kindOf func(path string) string
}

var _ admissionhttp.Recorder = (*Recorder)(nil)

// NewRecorder creates dir (0700) if needed.
func NewRecorder(dir string, log *slog.Logger) (*Recorder, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, field.Advise("plan.Options.RecordDir", "create {plan.Options.RecordDir}: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Recorder{dir: dir, log: log}, nil
}

// WithKinds makes r record, with each review, the configuration kind of
// the path it was served at (Entry.ConfigurationKind), as kindOf says
// ("" for unknown).
func (r *Recorder) WithKinds(kindOf func(path string) string) *Recorder {
	r.kindOf = kindOf
	return r
}

// Record implements admissionhttp.Recorder: the review and the answer, both
// redacted (RedactExchange), go into one file, mode 0600. A failure is logged, never returned: the
// admission has already been answered.
func (r *Recorder) Record(webhook, path string, review, answer []byte) {
	r.record(Entry{Webhook: webhook, Path: path}, review, answer)
}

// RecordLate records an answer that came after the apiserver had stopped
// waiting, marked with what the apiserver did instead, in a file whose name
// ends in _late.json; hookback replay reads it like any other. A nil answer
// is one that never came (hookback stopped first): the file has none, and
// a replay reports the answer it gets as a change from none.
func (r *Recorder) RecordLate(webhook, path string, review, answer []byte, late string) {
	r.record(Entry{Webhook: webhook, Path: path, Late: late}, review, answer)
}

// RecordShadow records your webhook's answer where it differs from the
// deployed one's, in a file whose name ends in _shadow.json.
func (r *Recorder) RecordShadow(webhook, path string, review, answer []byte, differences string) {
	r.record(Entry{Webhook: webhook, Path: path, Shadow: differences}, review, answer)
}

func (r *Recorder) record(e Entry, review, answer []byte) {
	webhook := e.Webhook
	if r.kindOf != nil {
		e.ConfigurationKind = r.kindOf(e.Path)
	}
	red, answer, err := RedactExchange(review, answer)
	if err != nil {
		r.log.Warn("review not recorded: cannot redact it", "webhook", webhook, "error", err)
		return
	}
	e.Review, e.Answer = red, answer
	b, err := json.Marshal(e)
	if err != nil {
		r.log.Warn("review not recorded", "webhook", webhook, "error", err)
		return
	}
	name := filepath.Join(r.dir, r.fileName(webhook, red))
	switch {
	case e.Late != "":
		name = strings.TrimSuffix(name, ".json") + "_late.json"
	case e.Shadow != "":
		name = strings.TrimSuffix(name, ".json") + "_shadow.json"
	}
	if err := WriteWhole(name, b); err != nil {
		r.log.Warn("review not recorded", "webhook", webhook, "file", name, "error", err)
	}
}

// WriteWhole writes b to name (mode 0600) through a temporary file and a
// rename, so that whoever lists the directory (hookback replay, a test, a
// user's script) sees the file only once it is whole. The temporary name
// does not end in .json and so is never taken for a recording.
func WriteWhole(name string, b []byte) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9.-]+`)

// safe makes s a bounded, lowercase file-name component.
func safe(s string) string {
	s = strings.Trim(unsafeChars.ReplaceAllString(strings.ToLower(s), "-"), "-.")
	if len(s) > 40 {
		s = s[:40]
	}
	if s == "" {
		s = "-"
	}
	return s
}

// FileName names the file of one review: time_webhook_operation_namespace_
// name_uid.json, each part made safe and bounded; seq (taken modulo 10000)
// keeps two files of one millisecond apart. The chain views of
// --record-dir are named alike (chain.DirSink).
func FileName(seq uint64, webhook, operation, namespace, name, uid string) string {
	ts := time.Now().UTC().Format("20060102T150405.000Z")
	return fmt.Sprintf("%s-%04d_%s_%s_%s_%s_%s.json", ts, seq%10000, safe(webhook), safe(operation),
		safe(namespace), safe(name), safe(uid))
}

// fileName is FileName for a review.
func (r *Recorder) fileName(webhook string, review []byte) string {
	var rv struct {
		Request struct {
			UID, Operation, Namespace, Name string
		}
	}
	_ = json.Unmarshal(review, &rv)
	q := rv.Request
	return FileName(r.seq.Add(1), webhook, q.Operation, q.Namespace, q.Name, q.UID)
}

// Redact replaces the values of data and stringData of a Secret in the
// review's object and oldObject by Redacted, keeping their keys. Other
// reviews come back as they are.
func Redact(review []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(review, &doc); err != nil {
		return nil, fmt.Errorf("decode review: %w", err)
	}
	// Keys are matched ignoring case, as encoding/json (and so hookback's
	// transport) matches them: whatever hookback reads as the object is
	// what gets redacted.
	changed := false
	for _, r := range folded(doc, "request") {
		req, _ := r.(map[string]any)
		for _, o := range append(folded(req, "object"), folded(req, "oldObject")...) {
			obj, _ := o.(map[string]any)
			if !isSecret(obj) {
				continue
			}
			if redactSecret(obj) {
				changed = true
			}
		}
	}
	if !changed {
		return review, nil
	}
	// The marker stays readable in the file: no \u003c escapes.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode redacted review: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// lastApplied is where kubectl apply keeps the whole object it applied,
// data included.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// redactSecret redacts a Secret's data and stringData values in place, and
// those of the copy kubectl apply keeps in an annotation (all of it when
// that copy does not parse).
func redactSecret(obj map[string]any) bool {
	changed := false
	for _, d := range append(folded(obj, "data"), folded(obj, "stringData")...) {
		if m, ok := d.(map[string]any); ok {
			for k := range m {
				m[k] = Redacted
			}
			changed = true
		}
	}
	for _, md := range folded(obj, "metadata") {
		if meta, ok := md.(map[string]any); ok && redactMetadata(meta) {
			changed = true
		}
	}
	return changed
}

// redactMetadata redacts kubectl's last-applied copy in a Secret's metadata.
func redactMetadata(meta map[string]any) bool {
	changed := false
	for _, a := range folded(meta, "annotations") {
		if anns, ok := a.(map[string]any); ok && redactAnnotations(anns) {
			changed = true
		}
	}
	return changed
}

// redactAnnotations redacts kubectl's last-applied copy in a Secret's
// annotations.
func redactAnnotations(anns map[string]any) bool {
	v, ok := anns[lastApplied]
	if !ok {
		return false
	}
	anns[lastApplied] = redactLastApplied(v)
	return true
}

// redactLastApplied is kubectl's last-applied copy of a Secret with its
// data redacted, or Redacted when it is not a JSON object.
func redactLastApplied(v any) any {
	s, ok := v.(string)
	if !ok {
		return Redacted
	}
	var applied map[string]any
	if json.Unmarshal([]byte(s), &applied) != nil || applied == nil {
		return Redacted
	}
	redactSecret(applied)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(applied) != nil {
		return Redacted
	}
	return buf.String()
}

// folded returns the values of m's keys equal to name ignoring case.
func folded(m map[string]any, name string) []any {
	var out []any
	for k, v := range m {
		if strings.EqualFold(k, name) {
			out = append(out, v)
		}
	}
	return out
}

// isSecret reports whether obj is a core/v1 Secret, by any spelling of the
// kind key (the value is compared as the apiserver would).
func isSecret(obj map[string]any) bool {
	for _, k := range folded(obj, "kind") {
		if k == "Secret" {
			return true
		}
	}
	return false
}

// NamedEntry is an Entry and the file it came from.
type NamedEntry struct {
	File string
	Entry
}

// ReadEntries reads recorded files, and every *.json file of directories
// (sorted), in the order given.
func ReadEntries(paths []string) ([]NamedEntry, error) {
	var out []NamedEntry
	for _, p := range paths {
		files := []string{p}
		if info, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("read recording %s: %w", p, err)
		} else if info.IsDir() {
			files, _ = filepath.Glob(filepath.Join(p, "*.json"))
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("read recording: %w", err)
			}
			var e Entry
			if err := json.Unmarshal(b, &e); err != nil || len(e.Review) == 0 {
				return nil, fmt.Errorf("%s is not a hookback recording (webhook, path, review, answer): %v", f, err)
			}
			out = append(out, NamedEntry{File: f, Entry: e})
		}
	}
	return out, nil
}
