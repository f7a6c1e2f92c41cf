package suite

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWatch: a save of a case reruns the suite, which hands over only the
// row that changed; a suite file that no longer loads is a run's error,
// watched past.
func TestWatch(t *testing.T) {
	dir := t.TempDir()
	hooks := []*Webhook{schemaWebhook(t)}
	write := func(name, expect string) {
		t.Helper()
		body := "apiVersion: hookback.dev/v1alpha1\nkind: Case\nwebhooks: [widgets.crdvalidate.hookback.dev]\noperation: CREATE\nnamespace: default\nobject: " +
			widget(name, 1, 3, "") + "\nexpect: " + expect + "\n"
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a", "{result: allowed}")
	write("b", "{result: allowed}")
	run := func(ctx context.Context) ([]Row, error) {
		files, err := Load([]string{dir})
		if err != nil {
			return nil, err
		}
		return Run(ctx, files, Options{Webhooks: hooks}), nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	runs := make(chan WatchRun, 8)
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, WatchOptions{Roots: []string{dir}, Interval: time.Second, Debounce: 10 * time.Millisecond}, run,
			func(r WatchRun) { runs <- r })
	}()
	next := func() WatchRun {
		t.Helper()
		select {
		case r := <-runs:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no run within 10s")
		}
		return WatchRun{}
	}
	if first := next(); first.Err != nil || len(first.Changed) != 2 || Count(first.All).Passed != 2 {
		t.Fatalf("first run: %+v, want both cases, passing", first)
	}
	write("b", "{result: denied}")
	second := next()
	if second.Err != nil || len(second.Changed) != 1 || second.Changed[0].Case != "b" || second.Changed[0].Status != Fail {
		t.Fatalf("after the save: %+v, want only b, failing", second)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("kind: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if third := next(); third.Err == nil {
		t.Fatalf("a broken suite file: %+v, want the run's error", third)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
