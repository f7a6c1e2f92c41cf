package session

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/hookback/hookback/manifests"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/reload"
)

// watchManifests watches your manifests and sends on changed after each
// save or `make manifests`. Manifests read from stdin are not watched.
func (r *run) watchManifests(ctx context.Context, changed chan<- struct{}) {
	if r.user == nil || r.user.manifests == nil {
		return
	}
	if slices.Contains(r.user.spec.Manifests, "-") {
		return // stdin is read once
	}
	roots := manifestRoots(r.user.spec.Manifests)
	w, err := reload.New(reload.Options{Trees: roots, Interval: r.cfg.ReloadInterval, Debounce: 100 * time.Millisecond, Log: r.cfg.Log,
		OnChange: func(context.Context) { trySend(changed) }})
	if err != nil {
		r.cfg.Log.Warn("manifests hot reload disabled", "error", err)
		return
	}
	r.working.Wait(func() { _ = w.Start(ctx) })
}

// manifestRoots are the trees to watch for paths: each path, and for a
// kustomize directory its parent, since its kustomization reaches into
// siblings (kubebuilder's config/default reads ../crd and ../webhook).
func manifestRoots(paths []string) []string {
	var out []string
	for _, p := range paths {
		root := filepath.Clean(p)
		if manifests.IsKustomization(root) {
			root = filepath.Dir(root)
		}
		if !slices.Contains(out, root) {
			out = append(out, root)
		}
	}
	return out
}

// reloadManifests reads your manifests again after a change. What changes
// in the webhooks and CRDs hookback already serves (rules, selectors,
// timeouts, a webhook removed, a CRD's schema) is applied as a template
// edit is. A webhook at a path hookback does not serve yet, or a new CRD,
// needs handlers that exist only from start: nothing is applied then (a
// configuration calling an unserved path would fail open, silently), and
// one line says to restart.
func (r *run) reloadManifests(ctx context.Context) {
	u := r.user
	m, routes, crds, err := u.reread(r.cfg.Session)
	if err != nil {
		r.cfg.Log.Error("your manifests changed but cannot be read; the previous configuration stays live", "error", err)
		return
	}
	if sameObjects(u.manifests, m) {
		// A generator rewrote what was there (`make manifests` does).
		r.cfg.Log.Debug("your manifests were rewritten with the same objects: nothing to apply")
		return
	}
	if missing := unserved(u.routes, routes, r.conversions, crds); len(missing) > 0 {
		r.cfg.Log.Warn("your manifests changed and name webhooks or CRDs this run does not serve: restart hookback start to serve them; the previous configuration stays live",
			"new", strings.Join(missing, ","))
		return
	}
	u.manifests = m
	if r.conversions != nil {
		r.conversions.crds = crds
	}
	r.cfg.Log.Info("your manifests changed: re-applying", "configurations", len(m.Webhooks), "crds", len(crds))
	r.reapply(ctx)
}

// reread reads the manifests as loadUserWebhooks did, with their routes
// and CRDs.
func (u *userWebhooks) reread(session string) (*manifests.Set, []registration.Route, []registration.CRD, error) {
	m, err := manifests.Read(u.spec.Manifests, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := u.spec.CheckMapped(m); err != nil {
		return nil, nil, nil, err
	}
	var routes []registration.Route
	if len(m.Webhooks) > 0 {
		if _, routes, err = manifests.Rewrite(m.Webhooks, u.spec.ManifestOptions("https://hookback.invalid", "", session, "")); err != nil {
			return nil, nil, nil, err
		}
	}
	crds, err := manifests.CRDsOf(m)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("CustomResourceDefinitions: %w", err)
	}
	return m, routes, crds, nil
}

// unserved names what the new routes and CRDs need that the served ones
// lack: a webhook path, a CRD, a conversion path.
func unserved(served, routes []registration.Route, conv *conversions, crds []registration.CRD) []string {
	var out []string
	for _, rt := range routes {
		if !slices.ContainsFunc(served, func(s registration.Route) bool { return s.Path == rt.Path }) {
			out = append(out, routeName(rt))
		}
	}
	var known []registration.CRD
	if conv != nil {
		known = conv.crds
	}
	for _, crd := range crds {
		i := slices.IndexFunc(known, func(k registration.CRD) bool { return k.Name == crd.Name })
		switch {
		case i < 0:
			out = append(out, "crd/"+crd.Name)
		case crd.Conversion != nil && (known[i].Conversion == nil || known[i].Conversion.Path != crd.Conversion.Path):
			out = append(out, "convert/"+crd.Name)
		}
	}
	return out
}

// sameObjects reports whether a and b hold the same webhook configurations
// and CRDs, wherever they were read from.
func sameObjects(a, b *manifests.Set) bool {
	if a == nil || b == nil || len(a.Webhooks) != len(b.Webhooks) || len(a.CRDs) != len(b.CRDs) {
		return false
	}
	for i := range a.Webhooks {
		if !equality.Semantic.DeepEqual(a.Webhooks[i].Object, b.Webhooks[i].Object) {
			return false
		}
	}
	for i := range a.CRDs {
		if !equality.Semantic.DeepEqual(a.CRDs[i], b.CRDs[i]) {
			return false
		}
	}
	return true
}
