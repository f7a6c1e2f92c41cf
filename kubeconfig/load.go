// Package kubeconfig loads a kubeconfig with client-go's loading rules, connects
// (the clients every command uses, after the preflight), builds
// clients from it, and runs the preflight checks hookback needs before it writes
// anything into a cluster: server version, identity and permissions.
package kubeconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/internal/errkind"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ErrNoConfig means no kubeconfig file was found and hookback is not running in a pod.
var ErrNoConfig = errors.New("kubeconfig: no kubeconfig found")

// Options says where to look for a kubeconfig. The zero value follows
// kubectl: $KUBECONFIG, then ~/.kube/config, then the in-cluster config.
type Options struct {
	// Path is an explicit kubeconfig file (--kubeconfig); it wins over everything.
	Path string
	// Context overrides the kubeconfig's current-context.
	Context string
	// Getenv reads KUBECONFIG; nil means os.Getenv. Tests inject it.
	Getenv func(string) string
	// HomeDir holds .kube/config; empty means the user's home directory.
	HomeDir string
	// InCluster builds the in-cluster config; nil means rest.InClusterConfig.
	InCluster func() (*rest.Config, error)
}

// Config is a loaded kubeconfig: the client config and where it came from.
type Config struct {
	Rest *rest.Config
	// Files are the kubeconfig files that were merged, in precedence order;
	// empty for the in-cluster config.
	Files []string
	// Context is the context in use; empty for the in-cluster config.
	Context string
	// Server is the apiserver URL.
	Server string
	// Clock is the apiserver's clock, read from the answers of every client
	// built from this Config.
	Clock *ServerClock
}

// Source describes where the config came from, for log lines and messages.
func (c *Config) Source() string {
	if len(c.Files) == 0 {
		return "in-cluster service account"
	}
	return strings.Join(c.Files, string(filepath.ListSeparator))
}

// Load resolves the kubeconfig as kubectl does and returns a client config.
func Load(opts Options) (*Config, error) {
	files, err := opts.files()
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		cfg, err := opts.inCluster()
		if errors.Is(err, ErrNoConfig) && opts.getenv(clientcmd.RecommendedConfigPathEnvVar) != "" {
			return nil, fmt.Errorf("%w (KUBECONFIG=%s names no existing file)", err, opts.getenv(clientcmd.RecommendedConfigPathEnvVar))
		}
		return cfg, err
	}
	rules := &clientcmd.ClientConfigLoadingRules{Precedence: files}
	if opts.Path != "" {
		rules = &clientcmd.ClientConfigLoadingRules{ExplicitPath: opts.Path}
	}
	raw, err := rules.Load()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %q: %w", strings.Join(files, ","), err)
	}
	ctxName := raw.CurrentContext
	if opts.Context != "" {
		ctxName = opts.Context
	}
	if err := checkContext(raw, ctxName, opts.Context != "", files); err != nil {
		return nil, err
	}
	cc := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{CurrentContext: ctxName})
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %q, context %q: %w", strings.Join(files, ","), ctxName, err)
	}
	return &Config{Rest: rc, Files: files, Context: ctxName, Server: rc.Host, Clock: &ServerClock{}}, nil
}

// files lists the kubeconfig files to merge, most important first, keeping
// only those that exist (as kubectl does for KUBECONFIG and the home file).
func (o Options) files() ([]string, error) {
	if o.Path != "" {
		if _, err := os.Stat(o.Path); err != nil {
			return nil, field.Advise("kubeconfig.Options.Path", "read {kubeconfig.Options.Path} %q: %w", o.Path, err)
		}
		return []string{o.Path}, nil
	}
	var candidates []string
	if env := o.getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		candidates = filepath.SplitList(env)
	} else {
		home := o.HomeDir
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		if home != "" {
			candidates = []string{filepath.Join(home, clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)}
		}
	}
	var files []string
	for _, f := range candidates {
		if f == "" || slices.Contains(files, f) {
			continue
		}
		if _, err := os.Stat(f); err == nil {
			files = append(files, f)
		}
	}
	return files, nil
}

func (o Options) getenv(key string) string {
	if o.Getenv == nil {
		return os.Getenv(key)
	}
	return o.Getenv(key)
}

func (o Options) inCluster() (*Config, error) {
	build := o.InCluster
	if build == nil {
		build = rest.InClusterConfig
	}
	rc, err := build()
	if err != nil {
		return nil, errkind.New(ErrNoConfig, field.Advise("kubeconfig.Options.Path", "no kubeconfig found: set {kubeconfig.Options.Path} or KUBECONFIG, or create ~/.kube/config; "+
			"to try hookback without a cluster: hookback cluster up, then export KUBECONFIG=$(hookback cluster kubeconfig)"))
	}
	if o.Context != "" {
		return nil, field.Clause("kubeconfig.Options.Context", strconv.Quote(o.Context), "given but no kubeconfig file was found: set {kubeconfig.Options.Path} or KUBECONFIG")
	}
	return &Config{Rest: rc, Server: rc.Host, Clock: &ServerClock{}}, nil
}

func checkContext(raw *clientcmdapi.Config, name string, explicit bool, files []string) error {
	where := strings.Join(files, ",")
	if name == "" {
		return field.Advise("kubeconfig.Options.Context", "kubeconfig %s has no current-context: pass {kubeconfig.Options.Context} (available: %s)", where, contextNames(raw))
	}
	c, ok := raw.Contexts[name]
	if !ok {
		what := "current-context"
		if explicit {
			what = "context"
		}
		return fmt.Errorf("%s %q not found in %s; available: %s", what, name, where, contextNames(raw))
	}
	if _, ok := raw.Clusters[c.Cluster]; !ok {
		return fmt.Errorf("context %q in %s names cluster %q, which is not defined there", name, where, c.Cluster)
	}
	return nil
}

func contextNames(raw *clientcmdapi.Config) string {
	names := make([]string, 0, len(raw.Contexts))
	for n := range raw.Contexts {
		names = append(names, n)
	}
	if len(names) == 0 {
		return "none"
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
