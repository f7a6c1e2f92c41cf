package admissionhttp

import (
	"net"
	"net/http"
)

// refuse ends a call with no answer at all, as a webhook that went away
// mid-call (admission.CallRefused). On HTTP/1 the connection is hijacked
// and reset (linger 0: the peer reads "connection reset by peer", not a
// clean EOF after a TLS close_notify). HTTP/2 connections cannot be
// hijacked (they carry other calls): the stream alone is reset, by
// panicking with http.ErrAbortHandler, which net/http recovers without a
// log line by design; nothing above this handler recovers it first. A
// writer that is neither (a replay's recorder) gets HTTP 500 with msg.
func refuse(w http.ResponseWriter, r *http.Request, msg string) {
	conn, _, err := http.NewResponseController(w).Hijack()
	switch {
	case err != nil && r.ProtoMajor == 2:
		panic(http.ErrAbortHandler)
	case err != nil:
		http.Error(w, msg, http.StatusInternalServerError)
		return
	}
	raw := conn
	if tc, ok := conn.(interface{ NetConn() net.Conn }); ok {
		raw = tc.NetConn()
	}
	if tcp, ok := raw.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = raw.Close()
}
