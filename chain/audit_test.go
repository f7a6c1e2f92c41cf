package chain

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

func TestAuditLogLookup(t *testing.T) {
	var tc explainCase
	b, err := os.ReadFile("testdata/exact.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &tc); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		mutate func(*Chain)
		want   string
	}{
		{name: "your patch and identity find the event", want: "a2"},
		{name: "another user's request is not it", mutate: func(c *Chain) { c.Identity.User = "carol" }},
		{name: "a different patch is another request", mutate: func(c *Chain) { c.Yours[0].Patch = json.RawMessage(`[]`) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch := tc.Chain
			ch.Yours = append([]Observation(nil), tc.Chain.Yours...)
			if c.mutate != nil {
				c.mutate(&ch)
			}
			log := &AuditLog{Path: "testdata/audit.log", Wait: time.Millisecond}
			rec, err := log.Lookup(&ch, "mine-s")
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if rec != nil {
				got = rec.AuditID
				if rec.Exact == nil || len(rec.Requested) == 0 {
					t.Errorf("record %+v: want the annotations and the requested object", rec)
				}
			}
			if got != c.want {
				t.Errorf("audit event %q, want %q", got, c.want)
			}
		})
	}
	if _, err := (&AuditLog{Path: "testdata/missing.log"}).Lookup(&tc.Chain, "mine-s"); err == nil {
		t.Error("a missing audit log: no error")
	}
}
