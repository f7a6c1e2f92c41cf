package webhooks

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

func TestPodName(t *testing.T) {
	tests := []struct {
		fixture     string
		words       []string // nil: the defaults
		wantAllowed bool
		wantCode    int32
		wantMsg     string
	}{
		{fixture: "v1-create-banned-name", wantCode: http.StatusForbidden, wantMsg: `pod name contains "offensive"`},
		{fixture: "v1beta1-create-banned-generatename", wantCode: http.StatusForbidden, wantMsg: `pod name contains "offensive"`},
		// UPDATE of a banned-name pod: a spec change is still denied, but a
		// name cannot change, so metadata-only writes (the Job controller
		// dropping its tracking finalizer, the pod-name-label controller's
		// label) and writes to a pod being deleted (even with a spec change)
		// go through. An old object that cannot be read: judged by name.
		{fixture: "v1-update-banned", wantCode: http.StatusForbidden, wantMsg: `pod name contains "offensive"`},
		{fixture: "v1beta1-update-banned", wantCode: http.StatusForbidden, wantMsg: `pod name contains "offensive"`},
		{fixture: "v1-update-banned-metadata-only", wantAllowed: true, wantCode: http.StatusOK},
		{fixture: "v1beta1-update-banned-metadata-only", wantAllowed: true, wantCode: http.StatusOK},
		{fixture: "v1-update-banned-deleting", wantAllowed: true, wantCode: http.StatusOK},
		{fixture: "v1beta1-update-banned-deleting", wantAllowed: true, wantCode: http.StatusOK},
		{fixture: "v1-update-banned-undecodable-old", wantCode: http.StatusForbidden, wantMsg: `pod name contains "offensive"`},
		{fixture: "v1-create-allowed", wantAllowed: true, wantCode: http.StatusOK},
		{fixture: "v1beta1-create-allowed", wantAllowed: true, wantCode: http.StatusOK},
		{fixture: "v1beta1-update-allowed", wantAllowed: true, wantCode: http.StatusOK},
		{fixture: "v1-delete", wantAllowed: true, wantCode: http.StatusOK},
		{fixture: "v1-create-undecodable", wantCode: http.StatusBadRequest},
		// The message names the configured word that matched, as written.
		{fixture: "v1-create-allowed", words: []string{"apache", "NGINX"}, wantCode: http.StatusForbidden, wantMsg: `pod name contains "NGINX"`},
		{fixture: "v1beta1-create-allowed", words: []string{"7D9F"}, wantCode: http.StatusForbidden, wantMsg: `pod name contains "7D9F"`},
		{fixture: "v1-create-banned-name", words: []string{}, wantAllowed: true, wantCode: http.StatusOK},
	}
	for _, tt := range tests {
		name := tt.fixture
		if tt.words != nil {
			name += "/words=" + strings.Join(tt.words, ",")
		}
		t.Run(name, func(t *testing.T) {
			opts := DefaultOptions()
			if tt.words != nil {
				opts.BannedWords = tt.words
			}
			deps, _, _ := testDeps()
			h := buildOne(t, NamePodName, opts, deps)
			resp := h.Handle(context.Background(), loadRequest(t, NamePodName, tt.fixture))
			checkDecision(t, resp, tt.wantAllowed, tt.wantCode, tt.wantMsg)
			if len(resp.Patch) != 0 {
				t.Errorf("validating webhook returned a patch: %s", resp.Patch)
			}
		})
	}
}
