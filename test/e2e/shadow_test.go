package e2e

import (
	"context"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"
)

// deployWebhook registers, as a team would have deployed it, a validating
// webhook at url (a server on loopback) for this session's pods.
func deployWebhook(t *testing.T, session, url, caFile string) {
	t.Helper()
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	deployWebhookAt(t, session, admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url + "/validate"), CABundle: ca})
}

// shadowRows are the shadow column's text by row (webhook and name) of
// ns's reviews on the inspector's list; rows of your webhook's decision only.
func shadowRows(t *testing.T, page, ns string) map[string]string {
	t.Helper()
	cell := regexp.MustCompile(`<td data-label="Shadow" class="shadow s-[a-z-]+">([^<]*)</td>`)
	name := regexp.MustCompile(`class="name">` + regexp.QuoteMeta(ns) + `/([^<]+)</td>`)
	hook := regexp.MustCompile(`<td data-label="Webhook">([^ <]+)`)
	decision := regexp.MustCompile(`^ d-([a-z]+)"`)
	out := map[string]string{}
	for _, row := range strings.Split(page, `<tr class="review`)[1:] {
		n, c, h, d := name.FindStringSubmatch(row), cell.FindStringSubmatch(row), hook.FindStringSubmatch(row), decision.FindStringSubmatch(row)
		if n == nil || h == nil || d == nil {
			continue
		}
		text := "no shadow column"
		if c != nil {
			text = html.UnescapeString(c[1])
		}
		out[h[1]+" "+n[1]] = d[1] + " | " + text
	}
	return out
}

// inspectShadowColumn: each review's row on the inspector carries the
// comparison in its shadow column, beside your webhook's decision (one row
// per review, no row of its own for a difference), in the HTML and as
// Chromium renders it; the review's page has the difference in full.
func inspectShadowColumn(t *testing.T, base, ns string) {
	t.Helper()
	want := map[string]string{
		"vpod.example.com deny-x": "allowed | differs: decision: yours allowed, deployed denied (+1 more difference)",
		"vpod.example.com bad-y":  "denied | differs: decision: yours denied, deployed allowed (+1 more difference)",
		"vpod.example.com fine-z": "allowed | same",
		"mpod.example.com deny-x": "patched | same",
		"mpod.example.com bad-y":  "patched | same",
		"mpod.example.com fine-z": "patched | same",
	}
	var got map[string]string
	eventually(t, "the six reviews on the inspector", func(context.Context) (bool, error) {
		got = shadowRows(t, get(t, base+"/?namespace="+ns), ns)
		return len(got) >= len(want), nil
	})
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the inspector's rows (decision | shadow):\n%v\nwant\n%v", got, want)
	}
	t.Run("browser", func(t *testing.T) {
		ctx := browser(t, chromiumPath(t))
		if err := chromedp.Do(ctx, chromedp.Navigate(base+"/?namespace="+ns), chromedp.WaitVisible(chromedp.CSS("#rows tr.review"))); err != nil {
			t.Fatalf("open the inspector: %v", err)
		}
		cells, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('#rows tr.review')].map(r =>
			r.querySelector('td.name').textContent + ': ' + r.querySelector('td[data-label="Shadow"]').innerText).sort().join('\n')`))
		if err != nil {
			t.Fatalf("read the shadow column: %v", err)
		}
		wantCells := []string{ns + "/bad-y: differs: decision: yours denied, deployed allowed (+1 more difference)", ns + "/bad-y: same",
			ns + "/deny-x: differs: decision: yours allowed, deployed denied (+1 more difference)", ns + "/deny-x: same",
			ns + "/fine-z: same", ns + "/fine-z: same"}
		if cells != strings.Join(wantCells, "\n") {
			t.Errorf("the shadow column as rendered:\n%s\nwant\n%s", cells, strings.Join(wantCells, "\n"))
		}
		// The column is seen, not scrolled off: the table fits the window.
		if wide, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`(w => w.scrollWidth > w.clientWidth + 1)(document.querySelector('.table-wrap'))`)); wide {
			t.Error("the list with its shadow column scrolls sideways in a 1400px window")
		}
		screenshot(t, ctx, screenshots(t), "inspector-shadow.png")
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#rows tr.review.d-denied a.open`)), chromedp.WaitVisible(chromedp.CSS("#shadow"))); err != nil {
			t.Fatalf("open bad-y's review: %v", err)
		}
		section, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#shadow")))
		for _, w := range []string{"your webhook differs from the deployed one", "decision: yours denied, deployed allowed",
			`message: yours "controller-runtime says no to bad-y", deployed ""`, "allowed"} {
			if !strings.Contains(section, w) {
				t.Errorf("bad-y's shadow section lacks %q:\n%s", w, section)
			}
		}
	})
}

// TestShadowControllerRuntime: the deployed webhook is one build of
// controller-runtime's server (denies deny-*), your upstream another that
// differs in one rule (denies bad-*). With --shadow the apiserver's
// decisions follow the deployed build only, hookback's copies change
// nothing (no patch either), and every difference is logged, counted and
// summed up at exit.
func TestShadowControllerRuntime(t *testing.T) {
	requireLocal(t, "the deployed webhook is registered at a loopback URL, which only an apiserver on this machine reaches")
	t.Parallel()
	ns := namespace(t)
	session := sessionFor(t)
	deployed, deployedCA := startCRUpstream(t)
	mine, _ := startCRUpstream(t, "--deny-prefix", "bad-")
	deployWebhook(t, session, deployed, deployedCA)
	dir := t.TempDir()
	inspector := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session,
		"--webhooks", "none", "--controllers", "none", "--webhook-config", userManifests(t, session),
		"--upstream", mine, "--upstream-insecure", "--shadow", deployed, "--shadow-ca", deployedCA,
		"--record-dir", dir, "--inspector-address", inspector)
	p.ready(t)
	shadowPods(t, p, ns, session)
	inspectShadowColumn(t, "http://"+inspector, ns)
	files, _ := filepath.Glob(filepath.Join(dir, "*_shadow.json"))
	if len(files) != 2 {
		t.Fatalf("%d shadow records, want 2 (deny-x, bad-y)", len(files))
	}
	// Your webhook's answers, recorded: replayed to it, they are the same.
	if out, errOut, code := hookback(t, env.kubeconfig, append([]string{"replay", "--upstream", mine, "--upstream-insecure"}, files...)...); code != 0 {
		t.Errorf("replay of the shadow records: exit %d\n%s\n%s", code, out, errOut)
	}
	shadowSummary(t, p)
}
