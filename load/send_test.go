package load

import (
	"net/http"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		code int
		body string
		want string
	}{
		{name: "created", code: http.StatusCreated, want: KindOK},
		{name: "webhook denial", code: http.StatusForbidden,
			body: `{"kind":"Status","reason":"Forbidden","message":"admission webhook \"pod-name.hookback.dev\" denied the request: pod name contains \"offensive\""}`, want: KindDenied},
		{name: "policy denial", code: http.StatusUnprocessableEntity,
			body: `{"kind":"Status","reason":"Invalid","message":"pods \"x\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed expression"}`, want: KindDenied},
		{name: "priority and fairness", code: http.StatusTooManyRequests, body: `{"reason":"TooManyRequests"}`, want: KindThrottled},
		{name: "gateway timeout", code: http.StatusGatewayTimeout, want: KindTimeout},
		{name: "request deadline", code: http.StatusInternalServerError,
			body: `{"reason":"Timeout","message":"Timeout: request did not complete within requested timeout - context deadline exceeded"}`, want: KindTimeout},
		{name: "failing webhook, fail closed", code: http.StatusInternalServerError,
			body: `{"message":"Internal error occurred: failed calling webhook \"x\": connection refused"}`, want: KindServerError},
		{name: "rbac", code: http.StatusForbidden, body: `{"message":"pods is forbidden: User \"u\" cannot create resource \"pods\""}`, want: KindClientError},
		{name: "exists", code: http.StatusConflict, body: `{"reason":"AlreadyExists"}`, want: KindClientError},
		{name: "not json", code: http.StatusBadGateway, body: `bad gateway`, want: KindServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classify(tt.code, []byte(tt.body)); got != tt.want {
				t.Errorf("classify(%d) = %s, want %s", tt.code, got, tt.want)
			}
		})
	}
}

// Denials are answers, not errors: the error rate counts the rest.
func TestIsError(t *testing.T) {
	for _, k := range Kinds {
		t.Run(k, func(t *testing.T) {
			if want := k != KindOK && k != KindDenied; isError(k) != want {
				t.Errorf("isError(%s) = %v", k, !want)
			}
		})
	}
}
