package e2e

import (
	"context"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/chromedp/chromedp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "deployed-" + session},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "deployed.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url + "/validate"), CABundle: ca},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"e2e-upstream": session}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	ctx := context.Background()
	if _, err := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), cfg.Name, metav1.DeleteOptions{})
	})
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
	ctx := context.Background()

	if _, err := upstreamPod(ctx, ns, "deny-x", session, nil); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "controller-runtime says no to deny-x") {
		t.Fatalf("deny-x: err = %v, want the deployed webhook's denial", err)
	}
	for _, name := range []string{"bad-y", "fine-z"} {
		pod, err := upstreamPod(ctx, ns, name, session, nil)
		if err != nil {
			t.Fatalf("%s: %v: only the deployed webhook decides, and it allows", name, err)
		}
		if pod.Labels["cr-seen"] != "" {
			t.Errorf("%s carries cr-seen: hookback's shadow copy patched it", name)
		}
	}
	metrics := func() string { return get(t, "http://"+p.health+"/metrics") }
	eventually(t, "the shadow metrics", func(context.Context) (bool, error) {
		m := metrics()
		return strings.Contains(m, `hookback_shadow_reviews_total{result="different",webhook="vpod.example.com"} 2`) &&
			strings.Contains(m, `hookback_shadow_reviews_total{result="identical",webhook="vpod.example.com"} 1`) &&
			strings.Contains(m, `hookback_shadow_reviews_total{result="identical",webhook="mpod.example.com"} 3`), nil
	})
	log := p.stderr.String()
	for _, want := range []string{"name=deny-x differences=\"decision: yours allowed, deployed denied", "name=bad-y differences=\"decision: yours denied, deployed allowed"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	inspectShadowColumn(t, "http://"+inspector, ns)
	files, _ := filepath.Glob(filepath.Join(dir, "*_shadow.json"))
	if len(files) != 2 {
		t.Fatalf("%d shadow records, want 2 (deny-x, bad-y)", len(files))
	}
	// Your webhook's answers, recorded: replayed to it, they are the same.
	if out, errOut, code := hookback(t, env.kubeconfig, append([]string{"replay", "--upstream", mine, "--upstream-insecure"}, files...)...); code != 0 {
		t.Errorf("replay of the shadow records: exit %d\n%s\n%s", code, out, errOut)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("hookback exited %d", code)
	}
	if !strings.Contains(p.stderr.String(), `msg="shadow summary" webhook=all reviews=6 identical=4 different=2`) {
		t.Errorf("no exit summary:\n%s", p.stderr.String())
	}
}
