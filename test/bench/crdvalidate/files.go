package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/hookback/hookback/crdvalidate"
)

// files are the CRD and the objects as manifests, for the whole of
// `hookback validate --crd crd.yaml routes.yaml` without the process.
type files struct{ dir, crd, objects string }

func writeFiles(crd *unstructured.Unstructured, objs []*unstructured.Unstructured) (files, error) {
	dir, err := os.MkdirTemp("", "crdvalidate-bench-")
	if err != nil {
		return files{}, err
	}
	f := files{dir: dir, crd: filepath.Join(dir, "crd.yaml"), objects: filepath.Join(dir, "routes.yaml")}
	y, err := yaml.Marshal(crd.Object)
	if err != nil {
		return f, err
	}
	if err := os.WriteFile(f.crd, y, 0o644); err != nil {
		return f, err
	}
	var docs []byte
	for _, o := range objs {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			return f, err
		}
		docs = append(append(docs, "---\n"...), y...)
	}
	return f, os.WriteFile(f.objects, docs, 0o644)
}

// validate runs crdvalidate.Run as the command does and checks that all
// n objects were judged valid.
func (f files) validate(n int) (time.Duration, error) {
	start := time.Now()
	rep, err := crdvalidate.Run(context.Background(), crdvalidate.Options{CRDs: []string{f.crd}, Objects: []string{f.objects}}, nil)
	if err != nil {
		return 0, err
	}
	took := time.Since(start)
	if c := rep.Count(); len(rep) != n || c.Allowed != n {
		return 0, fmt.Errorf("validate judged %d objects, %d valid; want %d valid", len(rep), c.Allowed, n)
	}
	return took, nil
}

// cpuTime is the CPU this process has used (user and system): the cost
// of the offline path whatever else loads the machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadavg is the machine's 1-minute load average, printed beside each
// round's figures.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}
