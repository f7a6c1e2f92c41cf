package reload

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestFile(t *testing.T) {
	tests := []struct {
		name  string
		write func(t *testing.T, path string)
	}{
		{name: "in-place write", write: func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("v2"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "atomic rename, as editors do", write: func(t *testing.T, path string) {
			tmp := path + ".tmp"
			if err := os.WriteFile(tmp, []byte("v2"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.yaml.tmpl")
			if err := os.WriteFile(path, []byte("v1"), 0o644); err != nil {
				t.Fatal(err)
			}
			expectChange(t, path, func() { tc.write(t, path) })
		})
	}
}

// TestFileVolumeUpdate: a Secret or ConfigMap volume as the kubelet
// updates it. The file is a symlink through `..data` to a timestamped
// directory; an update writes a new directory and renames a new `..data`
// symlink over the old one, so no event names the file itself.
func TestFileVolumeUpdate(t *testing.T) {
	dir := t.TempDir()
	version := func(name, content string) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "tls.crt"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(name, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("..2026_11_23_17_00_00.1", "v1")
	path := filepath.Join(dir, "tls.crt")
	if err := os.Symlink(filepath.Join("..data", "tls.crt"), path); err != nil {
		t.Fatal(err)
	}
	expectChange(t, path, func() { version("..2026_11_23_17_01_00.2", "v2") })
}

// expectChange watches path as a file, runs change, and fails unless the
// watcher reports it. The backstop re-read is an hour away, so only
// fsnotify can report in time.
func expectChange(t *testing.T, path string, change func()) {
	t.Helper()
	changed, stop := start(t, Options{Files: []string{path}, Interval: time.Hour, Debounce: 5 * time.Millisecond})
	defer stop()
	change()
	waitFor(t, changed)
}

// TestFileRemovedIsNoChange: an editor that deletes before it writes is
// saving; only the new content is a change.
func TestFileRemovedIsNoChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.yaml.tmpl")
	if err := os.WriteFile(path, []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, stop := start(t, Options{Files: []string{path}, Interval: 5 * time.Millisecond, Debounce: time.Millisecond})
	defer stop()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	// The backstop compares every 5 ms: a change reported now is wrong.
	select {
	case <-changed:
		t.Fatal("a removed file was reported as a change")
	case <-time.After(100 * time.Millisecond):
	}
	if err := os.WriteFile(path, []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed)
}

// start runs a Watcher over o whose OnChange sends on the returned
// channel (one pending change kept); stop ends it and waits for Start.
func start(t *testing.T, o Options) (changed <-chan struct{}, stop func()) {
	t.Helper()
	ch := make(chan struct{}, 1)
	o.Log = slog.New(slog.DiscardHandler)
	o.OnChange = func(context.Context) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	w, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	return ch, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}
}

func waitFor(t *testing.T, changed <-chan struct{}) {
	t.Helper()
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no change reported within 10s")
	}
}
