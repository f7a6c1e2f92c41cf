package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// liveWithin is how soon a review must show on the open page, without a
// reload, after kubectl returns.
const liveWithin = 2 * time.Second

// chromiumPath runs hack/chromium (which installs Debian's chromium when
// missing). Without one the test is skipped, except under CI=true, where
// it fails.
func chromiumPath(t *testing.T) string {
	t.Helper()
	out, err := script(env.repo, "hack/chromium")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || lines[len(lines)-1] == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("hack/chromium: no chromium to drive (%v)", err)
		}
		t.Skipf("hack/chromium: no chromium to drive (%v); CI=true makes this a failure", err)
	}
	return lines[len(lines)-1]
}

// browser starts a headless Chromium that resolves no name but loopback
// ones, so the page can fetch nothing from any network.
func browser(t *testing.T, path string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1400, 1000),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"),
		chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return ctx
}

// screenshots is where the test's PNGs go: $HOOKBACK_SCREENSHOTS, else a
// temporary directory (kept in the log when the test fails).
func screenshots(t *testing.T) string {
	if d := os.Getenv("HOOKBACK_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Error(err)
	}
	t.Logf("screenshot %s", filepath.Join(dir, name))
}

// colorScheme emulates prefers-color-scheme.
func colorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return chromedp.Void{}, err
	}
}

// kubectl runs the local control plane's kubectl with stdin.
func kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	path, err := ctlKubectlPath()
	if err != nil {
		t.Skip("no kubectl: ", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"--kubeconfig", env.kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// rowID waits until the list shows a row of decision whose text has all
// of want, and returns its review id.
func rowID(t *testing.T, ctx context.Context, decision string, want ...string) string {
	t.Helper()
	q, _ := jsonString(want)
	js := fmt.Sprintf(`(() => { const want = %s;
		const r = [...document.querySelectorAll('#rows tr.review.d-%s')].find(r => want.every(w => r.textContent.includes(w)));
		return r ? r.dataset.id : false; })()`, q, decision)
	pctx, cancel := context.WithTimeout(ctx, liveWithin)
	defer cancel()
	id, err := chromedp.Run(pctx, chromedp.Poll[string](js, chromedp.WithPollingInterval(20*time.Millisecond)))
	if err != nil {
		html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("#rows")))
		t.Fatalf("no %s row with %q on the page within %s of kubectl (%v); rows:\n%s", decision, want, liveWithin, err, html)
	}
	return id
}

func jsonString(v []string) (string, error) {
	var b strings.Builder
	b.WriteString("[")
	for i, s := range v {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q", s)
	}
	b.WriteString("]")
	return b.String(), nil
}

// TestInspector drives the inspector page in Chromium: rows appear live as
// kubectl creates a denied pod, a patched pod and a Secret; the detail
// shows the patch and the diff; the Secret's data is not in the page; a
// replay reports the answer unchanged; and the review downloaded as a
// test case passes `hookback test` against the same webhook.
func TestInspector(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	ns := namespace(t)
	up := testUpstream(t, false)
	session := sessionFor(t)
	addr := "127.0.0.1:" + itoa(freePort(t))
	manifests := userManifests(t, session)
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session,
		// A banned word of its own: its pod-name sees every namespace, and
		// must not deny the pods of tests running beside it.
		"--webhooks", "pod-name,pod-lifespan", "--banned-words", bannedWord, "--controllers", "none", "--webhook-config", manifests,
		"--upstream", up.URL, "--inspector-address", addr)
	p.ready(t)
	if !strings.Contains(p.stdout.String(), "inspect:  http://"+addr+"/") {
		t.Errorf("the banner does not print the inspector's URL:\n%s", p.stdout.String())
	}
	ctx := browser(t, chromium)
	dir := screenshots(t)
	base := "http://" + addr

	patchedID, secretID := inspectLiveRows(t, ctx, base, ns, session)
	screenshot(t, ctx, dir, "inspector-list.png")
	inspectKeyboard(t, ctx, secretID)
	inspectPatchAndReplay(t, ctx, patchedID, dir)
	inspectDownloadCase(t, ctx, base, patchedID, manifests, up.URL)
	inspectRedaction(t, ctx, base, secretID)
	inspectEvents(t, ctx, base, ns)

	// A narrow window in dark mode still reads.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), colorScheme("dark"),
		chromedp.Navigate(base+"/?namespace="+ns), chromedp.WaitVisible(chromedp.CSS("#rows tr.review"))); err != nil {
		t.Fatalf("narrow dark list: %v", err)
	}
	screenshot(t, ctx, dir, "inspector-narrow-dark.png")
	if wide, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`)); wide {
		t.Error("the list scrolls sideways in a 390px window")
	}
}

// bannedWord is what the inspector test's pod-name denies.
const bannedWord = "inspectme"

// secretValue is the test Secret's password: it must never reach the page.
const secretValue = "s3cr3t-inspector-e2e"

// inspectLiveRows opens the list filtered to ns, creates a denied pod (the
// built-in pod-name), a pod the upstream patches and a Secret with kubectl,
// and sees each row appear without a reload. It returns the patched pod's
// and the Secret's review ids.
func inspectLiveRows(t *testing.T, ctx context.Context, base, ns, session string) (patchedID, secretID string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/?namespace="+ns),
		chromedp.Poll[chromedp.Void](`document.getElementById('live').textContent === 'live'`),
		chromedp.Evaluate[chromedp.Void](`window.hookbackNoReload = true`)); err != nil {
		t.Fatalf("open the inspector: %v", err)
	}
	denied := bannedWord + "-pod"
	if out, err := kubectl(t, "", "run", denied, "-n", ns, "--image=registry.example/app:e2e"); err == nil || !strings.Contains(out, bannedWord) {
		t.Fatalf("kubectl run %s: %v: %s (want the denial)", denied, err, out)
	}
	rowID(t, ctx, "denied", ns+"/"+denied, "pod-name", `pod name contains "`+bannedWord+`"`)
	if out, err := kubectl(t, "", "run", "patched-pod", "-n", ns, "--image=registry.example/app:e2e", "--labels=e2e-upstream="+session); err != nil {
		t.Fatalf("kubectl run patched-pod: %v: %s", err, out)
	}
	patchedID = rowID(t, ctx, "patched", ns+"/patched-pod", "mpod.example.com", "upstream", "1 op")
	secret := fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-credentials\n  namespace: %s\n  labels:\n    e2e-upstream: %q\nstringData:\n  password: %s\n", ns, session, secretValue)
	if out, err := kubectl(t, secret, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply the Secret: %v: %s", err, out)
	}
	secretID = rowID(t, ctx, "allowed", ns+"/db-credentials", "vpod.example.com", "secrets")
	if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.hookbackNoReload === true`)); err != nil || !ok {
		t.Errorf("the page was reloaded (%v)", err)
	}
	return patchedID, secretID
}

// inspectKeyboard: j focuses the newest review's link.
func inspectKeyboard(t *testing.T, ctx context.Context, newestID string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.KeyEvent("j")); err != nil {
		t.Fatal(err)
	}
	focused, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.closest('tr') ? document.activeElement.closest('tr').dataset.id : ''`))
	if err != nil || focused != newestID {
		t.Errorf("j focused review %q (%v), want the newest, %s", focused, err, newestID)
	}
}

// inspectPatchAndReplay opens the patched review: its operations, the diff
// before/after, then a replay to the same upstream, unchanged.
func inspectPatchAndReplay(t *testing.T, ctx context.Context, id, dir string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`tr[data-id="`+id+`"] a.open`)),
		chromedp.WaitVisible(chromedp.CSS("table.diff"))); err != nil {
		t.Fatalf("open the patched review: %v", err)
	}
	ops, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("table.ops")))
	if !strings.Contains(ops, "add") || !strings.Contains(ops, "/metadata/labels/upstream-seen") {
		t.Errorf("patch operations shown: %q", ops)
	}
	added, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('table.diff tr.add td.r, table.diff tr.change td.r')].map(td => td.textContent).join('\n')`))
	if !strings.Contains(added, `"upstream-seen": "yes"`) {
		t.Errorf("the diff's added lines lack the label: %q", added)
	}
	screenshot(t, ctx, dir, "inspector-detail.png")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#replay button")),
		chromedp.WaitVisible(chromedp.CSS("#replay-verdict"))); err != nil {
		t.Fatalf("replay: %v", err)
	}
	verdict, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#replay-verdict")))
	if !strings.Contains(verdict, "unchanged") {
		t.Errorf("replay verdict %q, want unchanged", verdict)
	}
	screenshot(t, ctx, dir, "inspector-replay.png")
}

// inspectEvents: a pod whose lifespan label is not a number is let through
// by pod-lifespan with a Warning Event, and its review's page shows it.
func inspectEvents(t *testing.T, ctx context.Context, base, ns string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/?namespace="+ns), chromedp.WaitVisible(chromedp.CSS("#rows tr.review"))); err != nil {
		t.Fatalf("open the list: %v", err)
	}
	if out, err := kubectl(t, "", "run", "lifespan-pod", "-n", ns, "--image=registry.example/app:e2e", "--labels=acme.com/lifespan-requested=forever"); err != nil {
		t.Fatalf("kubectl run lifespan-pod: %v: %s", err, out)
	}
	id := rowID(t, ctx, "allowed", ns+"/lifespan-pod", "pod-lifespan")
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/reviews/"+id), chromedp.WaitVisible(chromedp.CSS("#h-events"))); err != nil {
		t.Fatalf("open the lifespan pod's review: %v", err)
	}
	events, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("ul.events")))
	if err != nil {
		t.Fatalf("no Events listed on the lifespan pod's review: %v", err)
	}
	for _, want := range []string{"Warning", "LifespanInvalid", "lifespan-pod", "forever"} {
		if !strings.Contains(events, want) {
			t.Errorf("the review's Events %q lack %q", events, want)
		}
	}
}

// inspectRedaction: the Secret's data is nowhere in the DOM, the marker is.
func inspectRedaction(t *testing.T, ctx context.Context, base, id string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/reviews/"+id), chromedp.WaitVisible(chromedp.CSS("#object"))); err != nil {
		t.Fatalf("open the Secret's review: %v", err)
	}
	dom, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{secretValue, base64.StdEncoding.EncodeToString([]byte(secretValue))} {
		if strings.Contains(dom, leak) {
			t.Errorf("the Secret's data %q is in the page", leak)
		}
	}
	if !strings.Contains(dom, "&lt;redacted by hookback&gt;") {
		t.Error("the Secret's page does not show the redaction marker")
	}
}
