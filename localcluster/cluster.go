package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// ErrNoCluster: the state directory holds no cluster (never started, or down).
var ErrNoCluster = errors.New("localcluster: no such cluster")

// DefaultName is the cluster --name defaults to.
const DefaultName = "hookback"

// Options configure one cluster.
type Options struct {
	// Name is the cluster's name (kwokctl's); clusters of different names
	// run side by side.
	Name string
	// Dir is the state directory: the kwok workdir with pid files, logs and
	// certificates, the admin kubeconfig and the CA. Empty means
	// <Binaries.CacheDir>/clusters/<Name>.
	Dir string
	// Wait bounds each wait for readiness.
	Wait time.Duration
	// Binaries say where the binaries come from (Up only).
	Binaries BinaryOptions
	// Log gets progress lines; nil discards them.
	Log io.Writer
}

// Cluster is one local control plane, by its state directory.
type Cluster struct {
	o Options
	// kwokDir is kwokctl's KWOK_WORKDIR; workdir is the cluster's own.
	kwokDir, workdir string
	// revives counts the restarts of exited components by one Up.
	revives int
}

var validName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// New validates o and returns the cluster it names; it starts nothing.
func New(o Options) (*Cluster, error) {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if !validName.MatchString(o.Name) {
		return nil, fmt.Errorf("cluster name %q: use lowercase letters, digits and '-' (at most 63)", o.Name)
	}
	if o.Binaries.CacheDir == "" {
		o.Binaries.CacheDir = DefaultCacheDir()
	}
	if o.Dir == "" {
		o.Dir = filepath.Join(o.Binaries.CacheDir, "clusters", o.Name)
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	o.Dir = dir
	if o.Wait <= 0 {
		o.Wait = 3 * time.Minute
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	kwokDir := filepath.Join(dir, "kwok")
	return &Cluster{o: o, kwokDir: kwokDir, workdir: filepath.Join(kwokDir, "clusters", o.Name)}, nil
}

// Name is the cluster's name; Dir its state directory.
func (c *Cluster) Name() string { return c.o.Name }

// Dir is the cluster's state directory.
func (c *Cluster) Dir() string { return c.o.Dir }

// KubeconfigPath is where Up writes the admin kubeconfig (certificates
// embedded): <Dir>/kubeconfig. CA and key sit beside it (ca.crt, ca.key).
func (c *Cluster) KubeconfigPath() string { return filepath.Join(c.o.Dir, "kubeconfig") }

// Workdir is kwokctl's directory of this cluster: pids/, logs/, pki/.
func (c *Cluster) Workdir() string { return c.workdir }

func (c *Cluster) logf(format string, args ...any) {
	fmt.Fprintf(c.o.Log, format+"\n", args...)
}

// state is what Up records for Down and Status: the binaries it ran and
// whether it created the state directory itself.
type state struct {
	Name       string   `json:"name"`
	Binaries   Binaries `json:"binaries"`
	CreatedDir bool     `json:"createdDir"`
}

func (c *Cluster) statePath() string { return filepath.Join(c.o.Dir, "cluster.json") }

func (c *Cluster) readState() (state, error) {
	b, err := os.ReadFile(c.statePath())
	if errors.Is(err, os.ErrNotExist) {
		return state{}, fmt.Errorf("%w: %q has no cluster in %s: start it with hookback cluster up", ErrNoCluster, c.o.Name, c.o.Dir)
	}
	if err != nil {
		return state{}, err
	}
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return state{}, fmt.Errorf("read %s: %w", c.statePath(), err)
	}
	return s, nil
}

func (c *Cluster) writeState(s state) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(c.statePath(), append(b, '\n'), 0o644)
}

// writeFileAtomic writes a file whole or not at all.
func writeFileAtomic(path string, b []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (c *Cluster) lock(ctx context.Context) (*fileLock, error) {
	return lockFile(ctx, c.o.Dir+".lock")
}

// Kubeconfig returns the admin kubeconfig's path, or ErrNoCluster.
func (c *Cluster) Kubeconfig() (string, error) {
	p := c.KubeconfigPath()
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%w: no %s: start the cluster with hookback cluster up --name %s", ErrNoCluster, p, c.o.Name)
	}
	return p, nil
}

// Binaries resolves the binaries Up would run (downloading or building them
// into the cache), without starting anything.
func (c *Cluster) Binaries(ctx context.Context) (Binaries, error) {
	return Resolve(ctx, c.o.Binaries)
}
