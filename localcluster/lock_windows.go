package localcluster

import (
	"context"
	"errors"
)

// ErrUnsupported: the local control plane runs on Linux and macOS only
// (kwokctl's binary runtime and the Kubernetes binaries it starts).
var ErrUnsupported = errors.New("localcluster: hookback cluster runs on Linux and macOS only; on Windows use kind or another cluster")

type fileLock struct{}

func lockFile(context.Context, string) (*fileLock, error) { return nil, ErrUnsupported }

func (*fileLock) unlock() {}
