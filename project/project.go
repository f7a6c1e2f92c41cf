// Package project recognizes a kubebuilder or Operator SDK project (a
// PROJECT file at its root) and says what hookback needs from it: which
// manifests to read, what the project is called, and the one command that
// starts its manager.
package project

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/manifests"
	"sigs.k8s.io/yaml"
)

// File is the name of the project file kubebuilder (and Operator SDK,
// which scaffolds with kubebuilder's plugins) writes at a project's root.
const File = "PROJECT"

// DefaultUpstream is where a kubebuilder manager serves its webhooks:
// controller-runtime's webhook server on port 9443.
const DefaultUpstream = "https://127.0.0.1:9443"

// Project is a kubebuilder or Operator SDK project on disk.
type Project struct {
	// Dir is the project's root, absolute.
	Dir string
	// Name and Domain are PROJECT's projectName and domain; Layout its
	// plugin keys (go.kubebuilder.io/v4; Operator SDK adds its own).
	Name, Domain string
	Layout       []string
	// Manifests are the kustomize directories to read: config/default, or
	// config/webhook and config/crd when that does not render or holds no
	// webhook configuration nor CRD.
	Manifests []string
	// Fallback says why config/default was not used; "" when it was.
	Fallback string
	// Run starts the manager: make run, else go run on the main package.
	Run string
}

// Has reports whether dir holds a PROJECT file.
func Has(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, File))
	return err == nil && !st.IsDir()
}

// projectFile is what hookback reads of PROJECT.
type projectFile struct {
	ProjectName string `json:"projectName"`
	Domain      string `json:"domain"`
	Repo        string `json:"repo"`
	// Layout is a list since PROJECT version 3, a string before.
	Layout any `json:"layout"`
}

// Load reads the project in dir.
func Load(dir string) (*Project, error) {
	b, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		return nil, fmt.Errorf("read project: %w", err)
	}
	var pf projectFile
	if err := yaml.Unmarshal(b, &pf); err != nil {
		return nil, fmt.Errorf("read project %s: %w", filepath.Join(dir, File), err)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	p := &Project{Dir: dir, Name: pf.ProjectName, Domain: pf.Domain, Layout: layout(pf.Layout), Run: runCommand(dir)}
	if p.Name == "" {
		p.Name = filepath.Base(pf.Repo)
	}
	if p.Manifests, p.Fallback, err = manifestPaths(dir); err != nil {
		return nil, err
	}
	return p, nil
}

func layout(v any) []string {
	switch l := v.(type) {
	case string:
		return []string{l}
	case []any:
		var out []string
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// manifestPaths picks config/default when it renders and says something to
// hookback; else config/webhook and config/crd, those that exist.
func manifestPaths(dir string) ([]string, string, error) {
	def := filepath.Join(dir, "config", "default")
	var why string
	if !manifests.IsKustomization(def) {
		why = def + " is missing or has no kustomization"
	} else if m, err := manifests.Read([]string{def}, nil); err != nil {
		why = fmt.Sprintf("%s does not render: %v", def, err)
	} else if len(m.Webhooks) == 0 && len(m.CRDs) == 0 {
		why = def + " holds no webhook configuration nor CRD (are ../webhook and ../crd commented out in its kustomization?)"
	} else {
		return []string{def}, "", nil
	}
	var dirs []string
	for _, sub := range []string{"webhook", "crd"} {
		d := filepath.Join(dir, "config", sub)
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		return nil, "", field.Advise("plan.UserWebhooks.Manifests", "project %s: %s, and there is no config/webhook nor config/crd: pass {plan.UserWebhooks.Manifests} with your webhook manifests", dir, why)
	}
	return dirs, why, nil
}

var makeRun = regexp.MustCompile(`(?m)^run\s*:`)

// runCommand is the one command that starts the manager: the Makefile's
// run target (kubebuilder and Operator SDK scaffold one), else go run on
// cmd/main.go (layout v4) or main.go (v3).
func runCommand(dir string) string {
	if b, err := os.ReadFile(filepath.Join(dir, "Makefile")); err == nil && makeRun.Match(b) {
		return "make run"
	}
	for _, main := range []string{filepath.Join("cmd", "main.go"), "main.go"} {
		if _, err := os.Stat(filepath.Join(dir, main)); err == nil {
			return "go run ./" + filepath.ToSlash(main)
		}
	}
	return ""
}

// Title names the project in the banner: "project (tutorial.kubebuilder.io)".
func (p *Project) Title() string {
	t := p.Name
	if t == "" {
		t = filepath.Base(p.Dir)
	}
	if p.Domain != "" {
		t += " (" + p.Domain + ")"
	}
	return t
}

// Log says which manifests project mode reads, and why not config/default.
func (p *Project) Log(log *slog.Logger) {
	if p.Fallback != "" {
		log.Warn("project: falling back to config/webhook and config/crd", "why", p.Fallback)
	}
	log.Info("project mode", "project", p.Title(), "layout", strings.Join(p.Layout, ","), "manifests", strings.Join(p.Manifests, ","))
}

// ManifestsRel are Manifests relative to Dir, for the banner.
func (p *Project) ManifestsRel() []string {
	out := make([]string, 0, len(p.Manifests))
	for _, m := range p.Manifests {
		if r, err := filepath.Rel(p.Dir, m); err == nil {
			m = filepath.ToSlash(r)
		}
		out = append(out, m)
	}
	return out
}
