package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
)

// inspectDownloadCase opens a review's page, clicks "Download as a test
// case" in Chromium, waits for the download to complete, and runs the
// downloaded file with `hookback test` against the same webhook (the
// user's manifests and upstream): it must load as a case and pass, with
// the webhook called (the answer is its patch).
func inspectDownloadCase(t *testing.T, ctx context.Context, base, id, manifests, upstreamURL string) {
	t.Helper()
	dir := t.TempDir()
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	progress := chromedp.BrowserEvents(dctx, cdpbrowser.DownloadProgress)
	if err := chromedp.Do(dctx, chromedp.Navigate(base+"/reviews/"+id),
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.CallBrowser(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
				Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: new(true)})
			return err
		}),
		chromedp.Click(chromedp.CSS(`a[href="/reviews/`+id+`/case.yaml"]`))); err != nil {
		t.Fatalf("click Download as a test case: %v", err)
	}
	guid := ""
	for ev, err := range progress {
		if err != nil {
			t.Fatalf("the case's download did not complete: %v", err)
		}
		if ev.State == cdpbrowser.DownloadProgressStateCanceled {
			t.Fatalf("the case's download was canceled")
		}
		if ev.State == cdpbrowser.DownloadProgressStateCompleted {
			guid = ev.GUID
			break
		}
	}
	body, err := os.ReadFile(filepath.Join(dir, guid))
	if err != nil {
		t.Fatalf("the downloaded case: %v", err)
	}
	suiteDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(suiteDir, "downloaded.yaml"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := hookback(t, env.kubeconfig, "test", "--webhook-config", manifests, "--upstream", upstreamURL, "-o", "json", suiteDir)
	var rows []struct {
		Case, Webhook, Status, Detail string
		Got                           *struct{ Result string }
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("hookback test -o json (exit %d): %v\n%s\nstderr:\n%s\nthe case:\n%s", code, err, out, errOut, body)
	}
	if code != 0 || len(rows) != 1 || rows[0].Webhook != "mpod.example.com" || rows[0].Status != "PASS" || rows[0].Got == nil || rows[0].Got.Result != "patched" {
		t.Errorf("hookback test of the downloaded case exited %d: %+v, want one PASS of mpod.example.com with its patch\nstderr:\n%s\nthe case:\n%s", code, rows, errOut, body)
	}
	if !strings.Contains(string(body), "kind: Case") {
		t.Errorf("the download is not a Case file:\n%s", body)
	}
}
