package crdvalidate

import (
	"bytes"
	"compress/gzip"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"k8s.io/client-go/openapi"
)

// NativeSchemas are the OpenAPI v3 documents that native kinds are
// judged against, by the path the apiserver serves each at under
// /openapi/v3/ ("api/v1", "apis/apps/v1").
type NativeSchemas interface {
	// Name says where they come from, for messages.
	Name() string
	// Document is the path's document, nil when there is none.
	Document(path string) ([]byte, error)
}

//go:embed openapi
var bundle embed.FS

// maxDocument bounds a decompressed bundled document (api/v1 is about
// 200 KB without its descriptions).
const maxDocument = 16 << 20

// Bundled are the documents of the common built-in groups of the
// Kubernetes release in openapi/VERSION, embedded (hack/openapi-schemas
// regenerates them from the local control plane).
type Bundled struct{}

// Name is the bundle and its Kubernetes version.
func (Bundled) Name() string {
	v, err := bundle.ReadFile("openapi/VERSION")
	if err != nil {
		return "the bundled schemas"
	}
	return "the bundled schemas of Kubernetes " + strings.TrimPrefix(strings.TrimSpace(string(v)), "server ")
}

// Document is the bundled document of path, nil when the bundle lacks it.
func (Bundled) Document(path string) ([]byte, error) {
	gz, err := bundle.ReadFile("openapi/" + strings.ReplaceAll(path, "/", "_") + ".json.gz")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("bundled schema %s: %w", path, err)
	}
	b, err := io.ReadAll(io.LimitReader(zr, maxDocument))
	if err != nil {
		return nil, fmt.Errorf("bundled schema %s: %w", path, err)
	}
	return b, nil
}

// clusterSchemas are a cluster's documents, through client-go's OpenAPI
// v3 client (discovery's /openapi/v3 index, then each document once).
type clusterSchemas struct {
	client openapi.Client
	paths  map[string]openapi.GroupVersion
}

// ClusterSchemas are the documents that client's cluster serves: its
// own version of every built-in group, and its aggregated APIs.
func ClusterSchemas(client openapi.Client) NativeSchemas {
	return &clusterSchemas{client: client}
}

func (c *clusterSchemas) Name() string { return "the cluster's schemas" }

func (c *clusterSchemas) Document(path string) ([]byte, error) {
	if c.paths == nil {
		paths, err := c.client.Paths()
		if err != nil {
			return nil, fmt.Errorf("read the cluster's OpenAPI v3 index: %w", err)
		}
		c.paths = paths
	}
	gv, ok := c.paths[path]
	if !ok {
		return nil, nil
	}
	b, err := gv.Schema("application/json")
	if err != nil {
		return nil, fmt.Errorf("read the cluster's OpenAPI schema of %s: %w", path, err)
	}
	return b, nil
}
