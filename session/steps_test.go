package session

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestStartStepsInOrder: start takes its steps in this order, each needing
// the ones before it (nothing is written before the Lease is the session's;
// the canary only proves configurations already applied; ready only once
// verified), and the README's "What start does" tells them in that order.
func TestStartStepsInOrder(t *testing.T) {
	want := []string{"lease", "controllers", "tunnel", "register", "drift", "verify", "ready"}
	var got []string
	for _, s := range (&run{}).steps(time.Now()) {
		got = append(got, s.name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("start's steps = %v, want %v", got, want)
	}
	readme, err := os.ReadFile("../docs/usage.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "### What `start` does")
	if start < 0 {
		t.Fatal(`docs/usage.md has no "What start does" section`)
	}
	text = text[start:]
	// What docs/usage.md says for each step, in the order start takes them.
	said := []string{"takes this session's Lease", "Starts the controllers", "deploys the relay", "server-side apply", "verifies with a canary", "ready banner"}
	at := 0
	for _, phrase := range said {
		i := strings.Index(strings.ToLower(text[at:]), strings.ToLower(phrase))
		if i < 0 {
			t.Fatalf("docs/usage.md's \"What start does\" does not say %q after the step before it", phrase)
		}
		at += i
	}
}
