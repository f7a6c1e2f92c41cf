package suite

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// What a mutating webhook that changes its own output again does to its
// row (Options.Idempotence). The apiserver calls a mutating webhook again
// with the object as the later ones left it when its reinvocationPolicy is
// IfNeeded, so a second patch there changes every object twice (a sidecar
// injected twice); under Never it is a latent bug the good practices warn
// of, a note by default.
const (
	// IdempotenceAuto fails the row under reinvocationPolicy IfNeeded
	// and adds a note otherwise.
	IdempotenceAuto = "auto"
	IdempotenceFail = "fail"
	IdempotenceWarn = "warn"
	IdempotenceOff  = "off"
)

// IdempotenceModes lists what Options.Idempotence takes ("" is auto).
var IdempotenceModes = []string{IdempotenceAuto, IdempotenceFail, IdempotenceWarn, IdempotenceOff}

// Reinvocation is what a mutating webhook did when sent its own output.
type Reinvocation struct {
	// Changed is set when the second answer changed the object again:
	// Paths are its patch's operations' paths. Denied and Failed say the
	// second call was refused or failed, with Message.
	Changed, Denied, Failed bool
	Paths                   []string
	Message                 string
}

// Unsafe reports whether the second call did anything but leave the
// object as it was.
func (r Reinvocation) Unsafe() bool { return r.Changed || r.Denied || r.Failed }

// String is the finding, "not idempotent: second call patched /a, /b".
func (r Reinvocation) String() string {
	switch {
	case r.Changed:
		return "not idempotent: second call patched " + strings.Join(r.Paths, ", ")
	case r.Denied:
		return "not idempotent: second call, with its own output, denied it: " + r.Message
	case r.Failed:
		return "not idempotent: second call, with its own output, failed: " + r.Message
	}
	return ""
}

// reinvoke sends h the object it made (next, in the request's version) as
// a new review with a new uid, as the apiserver does under
// reinvocationPolicy IfNeeded. A second patch that leaves the object as it
// was (re-adding the same label) is idempotent.
func reinvoke(ctx context.Context, h picked, next *input, convs []ConversionWebhook) Reinvocation {
	send, err := next.withUID()
	if err == nil && h.equivalent != nil {
		send, err = send.inVersion(ctx, h.equivalent, convs)
	}
	if err != nil {
		return Reinvocation{Failed: true, Message: err.Error()}
	}
	o := call(ctx, h.w, send)
	switch o.Result {
	case Denied:
		return Reinvocation{Denied: true, Message: o.Message}
	case Error:
		return Reinvocation{Failed: true, Message: o.Message}
	case Patched:
		if sameJSON(send.req.Object.Raw, o.Object) {
			return Reinvocation{}
		}
		return Reinvocation{Changed: true, Paths: patchPaths(o.Patch)}
	}
	return Reinvocation{}
}

// withUID is in with a new uid: a review sent as it is gets it in its
// request too (a reinvocation is a new review).
func (in *input) withUID() (*input, error) {
	out := *in
	out.req.UID = uuid.NewUUID()
	uid, err := json.Marshal(out.req.UID)
	if err != nil {
		return nil, err
	}
	return out.withRequestField("uid", uid)
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// patchPaths are the paths of a JSON patch's operations, in order.
func patchPaths(patch []byte) []string {
	var ops []struct {
		Path string `json:"path"`
	}
	_ = json.Unmarshal(patch, &ops)
	out := make([]string, 0, len(ops))
	for _, op := range ops {
		out = append(out, op.Path)
	}
	return out
}

// reinvocationFails says whether a webhook's unsafe reinvocation fails
// its row under mode; false: a note.
func reinvocationFails(w *Webhook, mode string) bool {
	switch mode {
	case IdempotenceFail:
		return true
	case IdempotenceWarn:
		return false
	}
	p := w.Mutating.ReinvocationPolicy
	return p != nil && *p == admissionregistrationv1.IfNeededReinvocationPolicy
}

// markReinvocation puts an unsafe reinvocation on the webhook's row: a
// failure, or a note that says when it would be one.
func markReinvocation(row *Row, w *Webhook, r Reinvocation, mode string) {
	if mode == IdempotenceOff || !r.Unsafe() {
		return
	}
	msg := r.String()
	if !reinvocationFails(w, mode) {
		row.Notes = append(row.Notes, msg+" (a failure under reinvocationPolicy IfNeeded, or with --not-idempotent fail)")
		return
	}
	if p := w.Mutating.ReinvocationPolicy; p != nil && *p == admissionregistrationv1.IfNeededReinvocationPolicy {
		msg += " (reinvocationPolicy IfNeeded: the apiserver calls it again with its own output)"
	}
	failRow(row, msg)
}

// failRow fails a row for a check beyond the case's expectation, keeping
// what failed it already.
func failRow(row *Row, msg string) {
	if row.Status == Pass {
		row.Status, row.beyond = Fail, true
		row.Detail += "; " + msg
	}
	if row.Diff == "" {
		row.Diff = msg
		return
	}
	row.Diff += "\n" + msg
}
