package session

import (
	"io"
	"net/http"
	"regexp"
	"testing"
)

// inspectorPage fetches the list of the inspector the banner in out names.
func inspectorPage(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`inspect:\s+(http://127\.0\.0\.1:\d+/)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no inspector in the banner:\n%s", out)
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
