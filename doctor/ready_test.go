package doctor

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestReady(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		w.Write([]byte("not ready: store: not listening for peers' changes\n"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	if err := Ready(context.Background(), addr); err != nil {
		t.Fatalf("ready: %v", err)
	}
	status = http.StatusServiceUnavailable
	if err := Ready(context.Background(), addr); err == nil || !strings.Contains(err.Error(), "not listening") {
		t.Fatalf("not ready: %v, want the reason", err)
	}
	// Nothing listening: not ready (Health would let it pass).
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := l.Addr().String()
	l.Close()
	if err := Ready(context.Background(), closed); err == nil {
		t.Fatal("no admin listener counted as ready")
	}
}
