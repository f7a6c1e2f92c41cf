package manifests

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hookback/hookback/internal/errkind"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// IsKustomization reports whether dir holds a kustomization file
// (kustomization.yaml, kustomization.yml or Kustomization), the names
// kustomize itself recognizes.
func IsKustomization(dir string) bool {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if st, err := os.Stat(filepath.Join(dir, n)); err == nil && !st.IsDir() {
			return true
		}
	}
	return false
}

// kustomize renders dir in process as `kubectl kustomize dir` does (the
// same defaults: files only from within the kustomization's root, no
// plugins), so that names, namespaces, prefixes and patches are exactly
// what the cluster would get.
func kustomize(dir string) ([]byte, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, errkind.New(ErrInvalid, fmt.Errorf("render kustomization %s: %w", dir, err))
	}
	b, err := rm.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("render kustomization %s: %w", dir, err)
	}
	return b, nil
}
