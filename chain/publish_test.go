package chain

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// TestDirSink: a view goes to <record-dir>/chain/ in a file named as
// --record-dir names a review (record.FileName), mode 0600, whole, with
// the webhook, path and uid of your webhook's call beside the view.
func TestDirSink(t *testing.T) {
	dir := t.TempDir()
	sink, err := DirSink(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := View{Request: Identity{Operation: "CREATE", Namespace: "team-a", Name: "web-"}}
	sink(NewPublished("Mine.Example.com", "/mutate", "u-1", v))
	files, err := os.ReadDir(filepath.Join(dir, "chain"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 {
		t.Fatalf("%d files in chain/, want 1 (no temporary file left)", len(files))
	}
	name := files[0].Name()
	if !strings.HasSuffix(name, "_mine.example.com_create_team-a_web_u-1.json") {
		t.Errorf("file %s, want it named time_webhook_operation_namespace_name_uid.json", name)
	}
	info, err := files[0].Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
	raw, err := os.ReadFile(filepath.Join(dir, "chain", name))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Webhook, Path, UID string
		Chain              View
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Webhook != "Mine.Example.com" || got.Path != "/mutate" || got.UID != "u-1" || got.Chain.Request != v.Request {
		t.Errorf("recorded %+v, want the webhook, path, uid and view published", got)
	}
}

// TestPublisherYours: the publisher explains each chain with what the
// session registered (SetRegistered), and asks the audit log for your
// configuration's record: never another session's serving the same path,
// and none before the session said what it registered.
func TestPublisherYours(t *testing.T) {
	mine := mutatingConf("mine-s", "s", "mine.example.com", atURL("https://127.0.0.1:8643/mutate-mine"))
	theirs := mutatingConf("mine-a", "a", "mine.example.com", atURL("https://127.0.0.1:8700/mutate-mine"))
	cat := NewCatalog([]admissionregistrationv1.MutatingWebhookConfiguration{theirs, mine}, nil, nil, nil, nil, nil)
	var asked []string
	var got []Published
	p := NewPublisher(Publisher{Catalog: func() Catalog { return cat },
		Audit: func(_ *Chain, conf string) *Record { asked = append(asked, conf); return nil },
		Sinks: []func(Published){func(x Published) { got = append(got, x) }}})
	c := &Chain{Identity: Identity{Operation: "CREATE", Resource: "pods", Namespace: "demo", Name: "web"},
		Yours: []Observation{{Stage: StageYours, Webhook: "mine", Path: "/mutate-mine", UID: "u-1", Allowed: true, Object: json.RawMessage(`{}`)}}}

	// Each view is explained when asked for: the first before the session
	// said what it registered, the second after.
	viewOf := func() View {
		t.Helper()
		got = nil
		p.publish(c)
		if len(got) != 1 {
			t.Fatalf("%d views published, want 1", len(got))
		}
		v, _, err := got[0].View()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if conf := viewOf().Yours[0].Configuration; conf != "" {
		t.Errorf("before SetRegistered, your configuration is %q, want none", conf)
	}
	p.SetRegistered(Registered{Session: "s", Webhooks: []RegisteredWebhook{
		{Configuration: "mine-s", Webhook: "mine.example.com", Endpoint: "https://127.0.0.1:8643/mutate-mine"}}})
	if conf := viewOf().Yours[0].Configuration; conf != "mine-s" {
		t.Errorf("your configuration is %q, want mine-s", conf)
	}
	if !slices.Equal(asked, []string{"mine-s"}) {
		t.Errorf("the audit log was asked for %q, want only mine-s's record", asked)
	}
}
