package webhooks

import (
	"os"
	"testing"
)

// TestTemplateIsTheTable: webhook-url.yaml.tmpl, the template start embeds
// and users copy, is the table's rows' webhooks put together
// (DefaultTemplate); UPDATE_GOLDEN=1 rewrites it from them.
func TestTemplateIsTheTable(t *testing.T) {
	const path = "../../webhook-url.yaml.tmpl"
	want, err := DefaultTemplate()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s is not the table's rows' templates put together (UPDATE_GOLDEN=1 go test -run TestTemplateIsTheTable ./builtin/webhooks rewrites it):\n%s", path, want)
	}
}
