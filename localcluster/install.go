package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// installDir makes dir, once: under the lock dir+".lock", if dir exists it is
// reused as it is (installed reports false); otherwise fill writes into a
// fresh temporary directory beside dir, which is renamed into place only when
// fill succeeds. A failed or interrupted fill leaves nothing at dir, and the
// temporary directory is removed. Concurrent callers, in this process or
// another, wait for the first one and then reuse its dir.
func installDir(ctx context.Context, dir string, fill func(tmp string) error) (installed bool, err error) {
	lock, err := lockFile(ctx, dir+".lock")
	if err != nil {
		return false, err
	}
	defer lock.unlock()
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return false, nil
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return false, fmt.Errorf("install %s: %w", dir, err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := fill(tmp); err != nil {
		return false, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return false, fmt.Errorf("install %s: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return false, fmt.Errorf("install %s: %w", dir, err)
	}
	return true, nil
}

// hasAll reports whether dir holds every named executable.
func hasAll(dir string, names []string) bool {
	for _, n := range names {
		if !isExecutable(filepath.Join(dir, n)) {
			return false
		}
	}
	return true
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 && st.Size() > 0
}
