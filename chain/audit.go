package chain

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sync"
	"time"
)

// AuditLog reads the apiserver's audit log (JSON lines of audit.k8s.io/v1
// Events, --audit-log-path) where hookback can read it, for the apiserver's
// own record of a chain: its mutating webhooks' patch annotations and the
// object as the client sent it. It reads on from where it stopped, keeping
// the last events that carry such annotations.
type AuditLog struct {
	Path string
	// Wait is how long a lookup waits for the request's event: the
	// apiserver writes it once the request is done, just after the
	// validators. Zero means DefaultAuditWait.
	Wait time.Duration

	mu     sync.Mutex
	offset int64
	events []auditEvent
}

// DefaultAuditWait bounds the wait for a request's audit event.
const DefaultAuditWait = 3 * time.Second

// maxAuditLine bounds one audit event read; a longer line is skipped.
const maxAuditLine = 8 << 20

// maxAuditEvents bounds the events kept for lookups.
const maxAuditEvents = 2048

type auditEvent struct {
	AuditID   string `json:"auditID"`
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	ObjectRef *struct {
		Resource, Namespace, Name, APIGroup, Subresource string
	} `json:"objectRef"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	RequestObject            json.RawMessage   `json:"requestObject"`
	Annotations              map[string]string `json:"annotations"`
	RequestReceivedTimestamp time.Time         `json:"requestReceivedTimestamp"`
}

// Record is what the audit log says of one request.
type Record struct {
	AuditID string
	Exact   *Exact
	// Requested is the object as the client sent it.
	Requested json.RawMessage
}

// Lookup finds the audit event of c: same user, resource, namespace and
// operation, with a patch annotation of your webhook's configuration equal
// to your webhook's first patch (or none when it sent none). It waits up to
// Wait for the event to be written; nil when none is found.
func (a *AuditLog) Lookup(c *Chain, yourConf string) (*Record, error) {
	wait := a.Wait
	if wait <= 0 {
		wait = DefaultAuditWait
	}
	deadline := time.Now().Add(wait)
	for {
		if err := a.readNew(); err != nil {
			return nil, err
		}
		if r := a.find(c, yourConf); r != nil {
			return r, nil
		}
		if time.Now().After(deadline) {
			return nil, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readNew reads the lines written since the last read.
func (a *AuditLog) readNew() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, err := os.Open(a.Path)
	if err != nil {
		return fmt.Errorf("chain: audit log: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() < a.offset {
		a.offset = 0 // rotated
	}
	if _, err := f.Seek(a.offset, io.SeekStart); err != nil {
		return fmt.Errorf("chain: audit log: %w", err)
	}
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := readLine(r)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("chain: audit log: %w", err)
		}
		a.offset += int64(len(line))
		if !bytes.HasSuffix(line, []byte("\n")) {
			a.offset -= int64(len(line)) // a line still being written
			return nil
		}
		if len(line) > maxAuditLine || !bytes.Contains(line, []byte(AnnotationMutation)) {
			continue
		}
		var ev auditEvent
		if json.Unmarshal(line, &ev) != nil || ev.Stage != "ResponseComplete" || ev.ObjectRef == nil {
			continue
		}
		a.events = append(a.events, ev)
		if len(a.events) > maxAuditEvents {
			a.events = a.events[len(a.events)-maxAuditEvents:]
		}
	}
}

// readLine reads one line, at most maxAuditLine+1 bytes of it kept (the
// rest is read and dropped, so an oversized line is skipped whole).
func readLine(r *bufio.Reader) ([]byte, error) {
	var out []byte
	n := 0
	for {
		chunk, err := r.ReadSlice('\n')
		n += len(chunk)
		if len(out) <= maxAuditLine {
			out = append(out, chunk...)
		}
		switch {
		case err == nil:
			return out, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && n > 0:
			return out, nil
		default:
			return nil, err
		}
	}
}

var verbs = map[string]string{"CREATE": "create", "UPDATE": "update", "DELETE": "delete"}

func (a *AuditLog) find(c *Chain, yourConf string) *Record {
	a.mu.Lock()
	defer a.mu.Unlock()
	id := c.Identity
	for i := len(a.events) - 1; i >= 0; i-- {
		ev := a.events[i]
		ref := ev.ObjectRef
		if ev.User.Username != id.User || ref.Resource != id.Resource || ref.APIGroup != id.Group || ref.Namespace != id.Namespace || ref.Subresource != id.Subresource {
			continue
		}
		if v := verbs[id.Operation]; v != "" && ev.Verb != v && !(id.Operation == "UPDATE" && ev.Verb == "patch") {
			continue
		}
		exact, err := ExactFromAnnotations(ev.Annotations)
		if err != nil || exact == nil || !exact.sent(yourConf, c.Yours[0].Patch) {
			continue
		}
		return &Record{AuditID: ev.AuditID, Exact: exact, Requested: ev.RequestObject}
	}
	return nil
}

// sent reports whether conf's round-0 call is recorded with patch (none:
// recorded without one).
func (e *Exact) sent(conf string, patch json.RawMessage) bool {
	for _, c := range e.Calls {
		if c.Round != 0 || c.Configuration != conf {
			continue
		}
		if len(patch) == 0 {
			return len(c.Patch) == 0
		}
		var a, b any
		return json.Unmarshal(patch, &a) == nil && json.Unmarshal(c.Patch, &b) == nil && reflect.DeepEqual(a, b)
	}
	return false
}
