package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chainRow is one change as the chain section of a review's page shows
// it: its step, and the op, path, before, after and by cells.
type chainRow struct {
	Step, Op, Path, Before, After, By string
}

// inspectChain opens, in Chromium, the inspector's page of your webhook's
// first call for pod (start --chain with the inspector at base), and
// checks its chain section: the steps in the apiserver's order, the change
// before yours by before (cr-seen added), the change after yours by after
// (team: mine, then theirs), and the overwrite warning.
func inspectChain(t *testing.T, base, ns, pod, before, after string) {
	t.Helper()
	ctx := browser(t, chromiumPath(t))
	rows := chainPage(t, ctx, base, ns, pod)
	var steps []string
	for _, r := range rows {
		if len(steps) == 0 || steps[len(steps)-1] != r.Step {
			steps = append(steps, r.Step)
		}
	}
	order := strings.Join(steps, " | ")
	if !strings.Contains(order, "before your webhook | after your webhook") {
		t.Errorf("the page's steps with changes, in order: %s; want before your webhook, then after it", order)
	}
	want := []chainRow{
		{Step: "before your webhook", Op: "add", Path: "/metadata/labels/cr-seen", After: `"yes"`, By: before},
		{Step: "after your webhook", Op: "replace", Path: "/metadata/labels/team", Before: `"mine"`, After: `"theirs"`, By: after},
	}
	for _, w := range want {
		found := false
		for _, r := range rows {
			found = found || r.Step == w.Step && r.Op == w.Op && r.Path == w.Path && r.Before == w.Before && r.After == w.After && strings.Contains(r.By, w.By)
		}
		if !found {
			t.Errorf("the page shows no change %+v; it shows %+v", w, rows)
		}
	}
	warnings, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#chain-warnings")))
	if err != nil {
		t.Fatalf("no chain warnings on the page: %v", err)
	}
	if !strings.Contains(warnings, "overwritten") || !strings.Contains(warnings, "/metadata/labels/team") {
		t.Errorf("the page's chain warnings %q do not warn that /metadata/labels/team was overwritten", warnings)
	}
	screenshot(t, ctx, screenshots(t), "inspector-chain.png")
}

// chainPage finds, among the list's patched rows of ns/pod, the review
// whose page has a chain section (your webhook's first call: the view is
// attached to it once the validating observer has seen the request), and
// returns its changes. The view is made off the admission path, so the
// page is opened again until it has one, for up to 10 s.
func chainPage(t *testing.T, ctx context.Context, base, ns, pod string) []chainRow {
	t.Helper()
	// The first action starts the browser on ctx (not on a context with a
	// deadline, whose end would close it); the waits are bounded.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/?namespace="+ns)); err != nil {
		t.Fatalf("open the inspector: %v", err)
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Do(lctx, chromedp.WaitVisible(chromedp.CSS("#rows tr.review"))); err != nil {
		html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
		t.Fatalf("open the inspector's list of %s: %v; the page says:\n%s", ns, err, html)
	}
	ids, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](fmt.Sprintf(
		`[...document.querySelectorAll('#rows tr.review.d-patched')].filter(r => r.textContent.includes(%q)).map(r => r.dataset.id)`, ns+"/"+pod)))
	if err != nil || len(ids) == 0 {
		t.Fatalf("no patched row for %s/%s in the list (%v)", ns, pod, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, id := range ids {
			if err := chromedp.Do(ctx, chromedp.Navigate(base+"/reviews/"+id)); err != nil {
				t.Fatalf("open review %s: %v", id, err)
			}
			has, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('chain') !== null`))
			if err != nil {
				t.Fatal(err)
			}
			if !has {
				continue
			}
			rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]chainRow](`[...document.querySelectorAll('li.chain-step')].flatMap(li =>
				[...li.querySelectorAll('table.chain-changes tbody tr')].map(tr => { const c = [...tr.cells].map(td => td.textContent.trim());
					return {Step: li.dataset.step, Op: c[0], Path: c[1], Before: c[2], After: c[3], By: c[4]}; }))`))
			if err != nil {
				t.Fatalf("read the chain section of review %s: %v", id, err)
			}
			return rows
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("none of the reviews %v of %s/%s shows a chain section within 10 s", ids, ns, pod)
	return nil
}
