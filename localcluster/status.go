package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Component names, as kwokctl names their pid and log files.
const (
	compEtcd           = "etcd"
	compAPIServer      = "kube-apiserver"
	compControllerMgr  = "kube-controller-manager"
	compScheduler      = "kube-scheduler"
	compKwokController = "kwok-controller"
)

// components are the processes a cluster with binaries b runs.
func components(b Binaries) []string {
	c := []string{compEtcd, compAPIServer, compKwokController}
	if b.HasControllers() {
		c = append(c, compControllerMgr, compScheduler)
	}
	return c
}

// pid reads a component's pid file; 0 when there is none.
func (c *Cluster) pid(component string) int {
	b, err := os.ReadFile(filepath.Join(c.workdir, "pids", component+".pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

// componentArgs is a running component's command line, nil where unknown.
func (c *Cluster) componentArgs(component string) []string {
	pid := c.pid(component)
	if !ours(pid, c.workdir) {
		return nil
	}
	return cmdline(pid)
}

// errRevivable: only components that can be started again are down
// (kwokctl start cluster restarts them); etcd and the apiserver run.
var errRevivable = errors.New("not running")

// dead lists the cluster's components that do not run.
func (c *Cluster) dead(b Binaries) []string {
	var dead []string
	for _, comp := range components(b) {
		if !ours(c.pid(comp), c.workdir) {
			dead = append(dead, comp)
		}
	}
	return dead
}

// revive starts the components that exited again (kwokctl start cluster
// skips those running): under load a controller-manager that finds the
// apiserver unhealthy for 20 s at start exits, and nothing else restarts it.
// At most maxRevives times per Up.
func (c *Cluster) revive(ctx context.Context, b Binaries) error {
	dead := c.dead(b)
	if len(dead) == 0 {
		return nil
	}
	if c.revives >= maxRevives {
		return fmt.Errorf("%s exited again after %d restarts: see %s", strings.Join(dead, ", "), maxRevives, filepath.Join(c.workdir, "logs"))
	}
	c.revives++
	c.logf("%s exited (its log: %s); starting it again", strings.Join(dead, ", "), filepath.Join(c.workdir, "logs", dead[0]+".log"))
	return c.kwokctl(ctx, b, "start", "cluster", "--name", c.o.Name)
}

const maxRevives = 5

// healthy reports why the cluster cannot be reused as it runs, or nil: every
// component alive, /readyz ok, and the settings the tests rely on in place
// (a cluster made by an older hookback lacks one: recreate it rather than
// fail them later).
func (c *Cluster) healthy(ctx context.Context, b Binaries) error {
	if b.Kwokctl == "" {
		return errors.New("no record of its binaries")
	}
	for _, comp := range []string{compEtcd, compAPIServer} {
		if !ours(c.pid(comp), c.workdir) {
			return fmt.Errorf("%s is not running", comp)
		}
	}
	if dead := c.dead(b); len(dead) > 0 {
		return fmt.Errorf("%w: %s", errRevivable, strings.Join(dead, ", "))
	}
	cs, _, err := c.client()
	if err != nil {
		return err
	}
	if err := readyz(ctx, cs); err != nil {
		return fmt.Errorf("kube-apiserver is not ready: %w", err)
	}
	if args := c.componentArgs(compAPIServer); args != nil && !slices.Contains(args, "--enable-aggregator-routing=true") {
		return errors.New("kube-apiserver runs without --enable-aggregator-routing=true")
	}
	if args := c.componentArgs(compAPIServer); args != nil && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--audit-policy-file=") }) {
		return errors.New("kube-apiserver runs without the audit policy (start --chain's exact attribution reads its log)")
	}
	if args := c.componentArgs(compControllerMgr); args != nil && !slices.Contains(args, "--leader-elect=false") {
		return errors.New("kube-controller-manager runs with leader election (it exits when the apiserver restarts)")
	}
	if _, err := cs.Discovery().RESTClient().Get().
		AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/portforwards.kwok.x-k8s.io").DoRaw(ctx); err != nil {
		return fmt.Errorf("kwok runs without its PortForward resource: %w", err)
	}
	return nil
}

// ComponentStatus is one process of the cluster.
type ComponentStatus struct {
	Name    string
	PID     int
	Running bool
	// Absent: the cluster runs without it (no binary for the platform).
	Absent bool
}

// Status is what `hookback cluster status` reports.
type Status struct {
	Name, Dir, Kubeconfig, Server string
	Components                    []ComponentStatus
	// Ready: /readyz answered ok. ReadyErr says why not.
	Ready    bool
	ReadyErr error
	Binaries Binaries
}

// Healthy: every component runs and the apiserver is ready.
func (s Status) Healthy() bool {
	if !s.Ready {
		return false
	}
	for _, c := range s.Components {
		if !c.Absent && !c.Running {
			return false
		}
	}
	return true
}

// Status reports the cluster's processes and the apiserver's readiness;
// ErrNoCluster when it was never started or is down.
func (c *Cluster) Status(ctx context.Context) (Status, error) {
	st, err := c.readState()
	if err == nil && st.Binaries.Kwokctl == "" {
		err = fmt.Errorf("%w: %q has no cluster in %s: start it with hookback cluster up", ErrNoCluster, c.o.Name, c.o.Dir)
	}
	if err != nil {
		return Status{}, err
	}
	s := Status{Name: c.o.Name, Dir: c.o.Dir, Kubeconfig: c.KubeconfigPath(), Binaries: st.Binaries}
	for _, comp := range []string{compEtcd, compAPIServer, compKwokController, compControllerMgr, compScheduler} {
		cs := ComponentStatus{Name: comp, PID: c.pid(comp)}
		cs.Absent = !st.Binaries.HasControllers() && (comp == compControllerMgr || comp == compScheduler)
		cs.Running = !cs.Absent && ours(cs.PID, c.workdir)
		s.Components = append(s.Components, cs)
	}
	cl, server, err := c.client()
	s.Server = server
	if err == nil {
		err = readyz(ctx, cl)
	}
	s.Ready, s.ReadyErr = err == nil, err
	return s, nil
}
