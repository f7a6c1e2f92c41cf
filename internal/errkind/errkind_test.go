package errkind

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestNew(t *testing.T) {
	kind := errors.New("pkg: something failed")
	err := fmt.Errorf("outer: %w", New(kind, fmt.Errorf("read the file: %w", io.EOF)))
	if !errors.Is(err, kind) || !errors.Is(err, io.EOF) {
		t.Errorf("errors.Is lost the kind or the cause: %v", err)
	}
	if got, want := err.Error(), "outer: read the file: EOF"; got != want {
		t.Errorf("message %q, want %q (without the sentinel's text)", got, want)
	}
}
