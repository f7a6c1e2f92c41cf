// Package docs holds the checks on the repository's prose: the README and
// docs/*.md may only name what the tree holds (files, make targets, tests,
// benchmarks, Go identifiers, the layout table), every package imports only
// packages on lower floors of the layout's floors table, and every package
// logs errors under one key. They read the tree from its root.
package docs

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	// Every check reads paths as the README writes them: from the root.
	if err := os.Chdir("../.."); err != nil {
		fmt.Fprintln(os.Stderr, "test/docs: chdir to the repository root:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
