package crdvalidate

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWatch: a save of an object reruns validate, which hands over only
// the result that changed.
func TestWatch(t *testing.T) {
	dir := t.TempDir()
	crd, err := os.ReadFile(filepath.Join(corpus, "widgets-crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("crd.yaml", string(crd))
	objects := filepath.Join(dir, "objects")
	if err := os.Mkdir(objects, 0o755); err != nil {
		t.Fatal(err)
	}
	widget := func(name, class string) string {
		return "apiVersion: crdvalidate.hookback.dev/v1\nkind: Widget\nmetadata: {name: " + name + "}\nspec: {class: " + class + "}\n"
	}
	write("objects/a.yaml", widget("a", "gold"))
	write("objects/b.yaml", widget("b", "gold"))

	ctx, cancel := context.WithCancel(context.Background())
	runs := make(chan WatchRun, 8)
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, Options{CRDs: []string{filepath.Join(dir, "crd.yaml")}, Objects: []string{objects}},
			WatchOptions{Interval: time.Second, Debounce: 10 * time.Millisecond}, func(r WatchRun) { runs <- r })
	}()
	next := func() WatchRun {
		t.Helper()
		select {
		case r := <-runs:
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no run within 10s")
		}
		return WatchRun{}
	}
	if first := next(); len(first.Changed) != 2 || first.All.Count().Allowed != 2 {
		t.Fatalf("first run: %+v, want both objects, valid", first)
	}
	write("objects/b.yaml", widget("b", "a-class-name-longer-than-twenty"))
	second := next()
	if len(second.Changed) != 1 || second.Changed[0].Name != "b" || second.Changed[0].Allowed {
		t.Fatalf("after the save: changed %+v, want only b, invalid", second.Changed)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
