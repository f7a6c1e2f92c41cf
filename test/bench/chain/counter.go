package main

import (
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
)

// atomicCounter counts a webhook server's calls.
type atomicCounter struct{ atomic.Int64 }

// answers is a webhook server's handler: it decodes the review's uid,
// counts the call in c and allows, with patch when one is given (a JSON
// patch), in the review's version.
func answers(c *atomicCounter, patch []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var rv struct {
			APIVersion string `json:"apiVersion"`
			Request    struct {
				UID string `json:"uid"`
			} `json:"request"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&rv); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.Add(1)
		resp := map[string]any{"uid": rv.Request.UID, "allowed": true}
		if patch != nil {
			resp["patchType"], resp["patch"] = "JSONPatch", patch
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": rv.APIVersion, "kind": "AdmissionReview", "response": resp})
	}
}
