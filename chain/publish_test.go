package chain

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
