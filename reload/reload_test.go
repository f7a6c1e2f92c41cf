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
		{name: "atomic rename, as editors and ConfigMap mounts do", write: func(t *testing.T, path string) {
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
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			changed := make(chan struct{}, 1)
			// A long backstop interval, so only fsnotify can report in time.
			w := &FileWatcher{Path: path, Interval: time.Hour, Debounce: 5 * time.Millisecond, Log: slog.New(slog.DiscardHandler)}
			wait, err := w.Watch(ctx, changed)
			if err != nil {
				t.Fatal(err)
			}
			tc.write(t, path)
			select {
			case <-changed:
			case <-time.After(10 * time.Second):
				t.Fatal("no change reported within 10s")
			}
			cancel()
			wait()
		})
	}
}
