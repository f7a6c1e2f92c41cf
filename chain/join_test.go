package chain

import (
	"strings"
	"testing"
	"time"

	"github.com/hookback/hookback/internal/jsondiff"
)

func TestJoiner(t *testing.T) {
	a := Identity{Operation: "CREATE", Resource: "pods", Namespace: "demo", Name: "generateName:web-", User: "alice"}
	b := a
	b.User = "bob"
	obs := func(id Identity, stage Stage, uid string) Observation {
		return Observation{Stage: stage, Identity: id, UID: uid, Webhook: "mine"}
	}
	for _, tc := range []struct {
		name string
		in   []Observation
		// want is each done chain as its views' uids, in order: submitted,
		// yours..., after..., final.
		want       []string
		ambiguous  bool
		expireOpen bool
	}{
		{name: "one request, in order", in: []Observation{obs(a, StageSubmitted, "s"), obs(a, StageYours, "y"), obs(a, StageAfter, "l"), obs(a, StageFinal, "f")},
			want: []string{"s y l f"}},
		{name: "a reinvocation round", in: []Observation{obs(a, StageSubmitted, "s"), obs(a, StageYours, "y0"), obs(a, StageAfter, "l0"), obs(a, StageYours, "y1"), obs(a, StageAfter, "l1"), obs(a, StageFinal, "f")},
			want: []string{"s y0 y1 l0 l1 f"}},
		{name: "two users interleaved stay apart", in: []Observation{obs(a, StageSubmitted, "sa"), obs(b, StageSubmitted, "sb"), obs(b, StageYours, "yb"), obs(a, StageYours, "ya"),
			obs(a, StageAfter, "la"), obs(b, StageAfter, "lb"), obs(b, StageFinal, "fb"), obs(a, StageFinal, "fa")},
			want: []string{"sb yb lb fb", "sa ya la fa"}},
		{name: "two alike in flight are joined in order and marked ambiguous", in: []Observation{obs(a, StageSubmitted, "s1"), obs(a, StageSubmitted, "s2"), obs(a, StageYours, "y1"),
			obs(a, StageYours, "y2"), obs(a, StageAfter, "l1"), obs(a, StageAfter, "l2"), obs(a, StageFinal, "f1"), obs(a, StageFinal, "f2")},
			want: []string{"s1 y1 l1 f1", "s2 y2 l2 f2"}, ambiguous: true},
		{name: "a request your webhook never saw is dropped", in: []Observation{obs(a, StageSubmitted, "s"), obs(a, StageAfter, "l"), obs(a, StageFinal, "f")}},
		{name: "no validating view: done when it expires", in: []Observation{obs(a, StageSubmitted, "s"), obs(a, StageYours, "y")}, want: []string{"s y"}, expireOpen: true},
		{name: "no first view: the chain starts at yours", in: []Observation{obs(a, StageYours, "y"), obs(a, StageAfter, "l"), obs(a, StageFinal, "f")}, want: []string{"y l f"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(0, 0)
			var got []string
			ambiguous := false
			j := &Joiner{TTL: time.Second, Now: func() time.Time { return now }, Done: func(c *Chain) {
				got = append(got, uids(c))
				ambiguous = ambiguous || c.Ambiguous
			}}
			for _, o := range tc.in {
				j.Observe(o)
			}
			if tc.expireOpen {
				now = now.Add(2 * time.Second)
				j.Expire()
			}
			if strings.Join(got, " | ") != strings.Join(tc.want, " | ") {
				t.Errorf("chains %q, want %q", got, tc.want)
			}
			if ambiguous != tc.ambiguous {
				t.Errorf("ambiguous %v, want %v", ambiguous, tc.ambiguous)
			}
			if n := j.Open(); n != 0 {
				t.Errorf("%d chains left open", n)
			}
		})
	}
}

func uids(c *Chain) string {
	var s []string
	if c.Submitted != nil {
		s = append(s, c.Submitted.UID)
	}
	for _, o := range c.Yours {
		s = append(s, o.UID)
	}
	for _, o := range c.After {
		s = append(s, o.UID)
	}
	if c.Final != nil {
		s = append(s, c.Final.UID)
	}
	return strings.Join(s, " ")
}

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name, a, b string
		want       []string
	}{
		{"equal", `{"a":1}`, `{"a":1}`, nil},
		{"added, removed, replaced", `{"a":1,"b":{"c":2}}`, `{"a":2,"d":[1],"b":{}}`, []string{"replace /a", "remove /b/c", "add /d"}},
		{"array appended and escaped keys", `{"m":{"x/y~z":[1]}}`, `{"m":{"x/y~z":[1,2]}}`, []string{"add /m/x~1y~0z/1"}},
		{"managedFields are the apiserver's", `{"metadata":{"managedFields":[1]}}`, `{"metadata":{"managedFields":[2]}}`, nil},
		{"no object before", ``, `{"a":1}`, []string{"add "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changes, err := jsondiff.Pointers([]byte(tc.a), []byte(tc.b))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range changes {
				got = append(got, c.Op+" "+c.Path)
			}
			same(t, "changes", got, tc.want)
		})
	}
	if _, err := jsondiff.Pointers([]byte(`{`), nil); err == nil || !strings.Contains(err.Error(), "the earlier object") {
		t.Errorf("a broken object: %v, want an error naming it", err)
	}
}
