package crdvalidate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompileCache: across the runs of a watch, a CRD compiles once
// while it does not change, and a saved change is what the next run
// judges with.
func TestCompileCache(t *testing.T) {
	dir := t.TempDir()
	crd, err := os.ReadFile(filepath.Join(corpus, "widgets-crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crdFile, objFile := filepath.Join(dir, "crd.yaml"), filepath.Join(dir, "w.yaml")
	write := func(path, body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(crdFile, string(crd))
	write(objFile, "apiVersion: crdvalidate.hookback.dev/v1\nkind: Widget\nmetadata: {name: w}\nspec: {class: twenty-one-characters}\n")
	o := Options{CRDs: []string{crdFile}, Objects: []string{objFile}}
	cache := newCompileCache()
	judge := func() (bool, *CRD) {
		t.Helper()
		rep, err := run(context.Background(), o, nil, cache)
		if err != nil {
			t.Fatal(err)
		}
		if len(cache.last) != 1 {
			t.Fatalf("cache holds %d CRDs after a run, want the one used", len(cache.last))
		}
		for _, c := range cache.last {
			return rep[0].Allowed, c
		}
		return false, nil
	}
	allowed1, first := judge()
	allowed2, second := judge()
	if allowed1 || allowed2 {
		t.Fatalf("a 21-character class allowed (%v, %v) under maxLength 20", allowed1, allowed2)
	}
	if first != second {
		t.Error("the unchanged CRD was compiled again")
	}
	write(crdFile, strings.Replace(string(crd), "maxLength: 20", "maxLength: 30", 1))
	allowed3, third := judge()
	if third == second {
		t.Error("the saved CRD was not compiled again")
	}
	if !allowed3 {
		t.Error("judged with the old CRD: maxLength 30 should allow a 21-character class")
	}
}
