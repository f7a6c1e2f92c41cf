package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Down stops every process of the cluster and removes what Up created: the
// kwok workdir, the kubeconfig, the CA copies, its records, and the state
// directory when Up made it and it is left empty. The binaries in the cache
// stay. Down of a cluster that is not there does nothing.
func (c *Cluster) Down(ctx context.Context) error {
	lock, err := c.lock(ctx)
	if err != nil {
		return err
	}
	defer lock.unlock()
	return c.down(ctx, true)
}

// down is Down under the lock; all also removes the records (Up recreating
// a cluster keeps them).
func (c *Cluster) down(ctx context.Context, all bool) error {
	st, _ := c.readState()
	before := c.leftovers()
	if _, err := os.Stat(c.workdir); err == nil {
		c.dropStalePidFiles()
		if st.Binaries.Kwokctl != "" && isExecutable(st.Binaries.Kwokctl) {
			if err := c.kwokctl(ctx, st.Binaries, "delete", "cluster", "--name", c.o.Name,
				"--kubeconfig", filepath.Join(c.kwokDir, "kubeconfig")); err != nil {
				c.logf("%v; stopping the processes by hand", err)
			}
		}
	}
	if err := c.killLeftovers(); err != nil {
		return err
	}
	waitGone(append(before, c.leftovers()...), 10*time.Second)
	for _, p := range []string{c.workdir, filepath.Join(c.kwokDir, "cache"), filepath.Join(c.kwokDir, "kwok.yaml"),
		filepath.Join(c.kwokDir, "kubeconfig"), filepath.Join(c.kwokDir, "audit-policy.yaml"), filepath.Join(c.o.Dir, "audit.log"), c.KubeconfigPath(), filepath.Join(c.o.Dir, "ca.crt"), filepath.Join(c.o.Dir, "ca.key")} {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("remove %s: %w", p, err)
		}
	}
	// Directories kwokctl made, only if nothing else is in them.
	removeIfEmpty(filepath.Join(c.kwokDir, "clusters"))
	removeIfEmpty(c.kwokDir)
	if all {
		os.Remove(filepath.Join(c.o.Dir, "kwokctl.log"))
		os.Remove(c.statePath())
		if st.CreatedDir {
			removeIfEmpty(c.o.Dir)
		}
		c.logf("cluster %s is down", c.o.Name)
	}
	return nil
}

func removeIfEmpty(dir string) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) == 0 {
		os.Remove(dir)
	}
}

// dropStalePidFiles: after a reboot a pid file may name an unrelated
// process, which kwokctl would kill blindly; forget such pid files first.
func (c *Cluster) dropStalePidFiles() {
	files, _ := filepath.Glob(filepath.Join(c.workdir, "pids", "*.pid"))
	for _, f := range files {
		comp := filepath.Base(f)
		comp = comp[:len(comp)-len(".pid")]
		if !ours(c.pid(comp), c.workdir) {
			os.Remove(f)
		}
	}
}

// leftovers are the cluster's live processes: from its pid files, and every
// process whose command line names its workdir.
func (c *Cluster) leftovers() []int {
	var pids []int
	files, _ := filepath.Glob(filepath.Join(c.workdir, "pids", "*.pid"))
	for _, f := range files {
		comp := filepath.Base(f)
		if pid := c.pid(comp[:len(comp)-len(".pid")]); ours(pid, c.workdir) {
			pids = append(pids, pid)
		}
	}
	for _, pid := range processesNaming(c.workdir) {
		if !slices.Contains(pids, pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killLeftovers: SIGTERM, a short grace period (kwokctl itself SIGKILLs its
// components), then SIGKILL.
func (c *Cluster) killLeftovers() error {
	pids := c.leftovers()
	if len(pids) == 0 {
		return nil
	}
	c.logf("stopping leftover processes %v", pids)
	for _, kill := range []bool{false, true} {
		for _, pid := range pids {
			if err := signal(pid, kill); err != nil {
				return fmt.Errorf("stop process %d: %w", pid, err)
			}
		}
		if pids = waitGone(pids, 5*time.Second); len(pids) == 0 {
			return nil
		}
	}
	return errors.New(fmt.Sprint("processes still running after SIGKILL: ", pids))
}

// waitGone waits until none of pids runs, or d passes; it returns those
// still running.
func waitGone(pids []int, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		pids = slices.DeleteFunc(pids, func(p int) bool { return !alive(p) })
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(100 * time.Millisecond)
	}
}
