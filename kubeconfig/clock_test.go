package kubeconfig

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// TestServerClock: a client built from a Config reads the apiserver's clock
// from the Date of its answers, however far the local clock is from it.
func TestServerClock(t *testing.T) {
	tests := []struct {
		name string
		skew time.Duration // the apiserver's clock minus the local one
	}{
		{"apiserver ahead", 2 * time.Hour},
		{"apiserver behind", -10 * time.Minute},
		{"in step", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Date", time.Now().Add(tc.skew).UTC().Format(http.TimeFormat))
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"major":"1","minor":"36","gitVersion":"v1.36.0"}`))
			}))
			defer srv.Close()
			cfg := &Config{Rest: &rest.Config{Host: srv.URL}, Server: srv.URL, Clock: &ServerClock{}}
			if got := cfg.Clock.Now().Sub(time.Now()); got.Abs() > time.Second {
				t.Fatalf("before any answer the clock is %v off the local one, want the local clock", got)
			}
			cs, err := cfg.Clientset(5 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ServerVersion(context.Background(), cs, srv.URL); err != nil {
				t.Fatal(err)
			}
			// Date has whole seconds: the estimate is within a second, and
			// a clock in step with the apiserver's is left as it is.
			got := cfg.Clock.Now().Sub(time.Now())
			if off := got - tc.skew; off.Abs() > 1500*time.Millisecond {
				t.Errorf("clock off the apiserver's by %v, want within 1.5s", off)
			}
			if tc.skew == 0 && got.Abs() > 50*time.Millisecond {
				t.Errorf("clock moved %v from a local clock in step with the apiserver's, want it left", got)
			}
		})
	}
}

func TestServerClockNil(t *testing.T) {
	var c *ServerClock
	if d := c.Now().Sub(time.Now()); d.Abs() > time.Second {
		t.Errorf("nil clock %v off the local clock", d)
	}
}
