package reload

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestFileWatcher(t *testing.T) {
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

// TestFileWatcherVolumeUpdate: a Secret or ConfigMap volume as the kubelet
// updates it. The file is a symlink through `..data` to a timestamped
// directory; an update writes a new directory and renames a new `..data`
// symlink over the old one, so no event names the file itself.
func TestFileWatcherVolumeUpdate(t *testing.T) {
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

// expectChange watches path, runs change, and fails unless the watcher
// reports it. The backstop re-read is an hour away, so only fsnotify can
// report in time.
func expectChange(t *testing.T, path string, change func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changed := make(chan struct{}, 1)
	w := &FileWatcher{Path: path, Interval: time.Hour, Debounce: 5 * time.Millisecond, Log: slog.New(slog.DiscardHandler)}
	wait, err := w.Watch(ctx, changed)
	if err != nil {
		t.Fatal(err)
	}
	change()
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no change reported within 10s")
	}
	cancel()
	wait()
}
