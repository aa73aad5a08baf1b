package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/pgtest"
	"github.com/sluice-egress/sluice/rules"
)

const measureConfig = `version: 1
listen: {proxy: 127.0.0.1:0, admin: 127.0.0.1:0}
data_dir: data
%s
tenants:
  default:
    token_file: data/default.token
    classes:
      agent:
        allow:
          - host: api.example.test
`

// TestMeasureReplica measures one replica on each store for
// docs/scaling.md: refused requests per second (each one an incident
// committed before the answer) and allowed CONNECTs per second (identify,
// decide, answer; no upstream). Off by default:
// SLUICE_MEASURE=1 SLUICE_POSTGRES_DURABLE=1 go test -run MeasureReplica -v ./cmd/sluice
func TestMeasureReplica(t *testing.T) {
	if os.Getenv("SLUICE_MEASURE") != "1" {
		t.Skip("set SLUICE_MEASURE=1 to measure")
	}
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			dir := t.TempDir()
			storeCfg := ""
			if driver == "postgres" {
				t.Setenv("SLUICE_TEST_REPLICA_DSN", pgtest.New(t).NewDatabase(t))
				storeCfg = "store: {driver: postgres, dsn_env: SLUICE_TEST_REPLICA_DSN}"
			}
			os.MkdirAll(filepath.Join(dir, "data"), 0o700)
			tok, _ := rules.NewToken()
			mustWriteFile(t, filepath.Join(dir, "data", "default.token"), tok+"\n")
			mustWriteFile(t, filepath.Join(dir, "sluice.yaml"), fmt.Sprintf(measureConfig, storeCfg))
			cfg, err := config.Open(filepath.Join(dir, "sluice.yaml"), "")
			if err != nil {
				t.Fatal(err)
			}
			s := &Server{Config: cfg, Stdout: io.Discard, Logger: slog.New(slog.DiscardHandler), DrainTimeout: time.Second}
			if err := s.Open(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { s.Run(ctx); close(done) }()
			t.Cleanup(func() { cancel(); <-done })

			c := refusedClient(t, s.ProxyAddr(), filepath.Join(dir, "data"))
			refused := perSecond(3*time.Second, 32, func(i int64) bool {
				resp, err := c.Get(fmt.Sprintf("http://denied-%d.example.test/p/%d", i%7, i))
				if err != nil {
					return false
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode == http.StatusForbidden && resp.Header.Get("Sluice-Incident") != ""
			})
			allowed := perSecond(3*time.Second, 32, func(int64) bool {
				return connectStatusQuiet(s.ProxyAddr(), tok, "api.example.test:443") == http.StatusOK
			})
			t.Logf("%s: %.0f refused requests/s (incidents committed), %.0f allowed CONNECTs/s", driver, refused, allowed)
		})
	}
}

// perSecond runs f from workers goroutines for d and returns its successes per second.
func perSecond(d time.Duration, workers int, f func(i int64) bool) float64 {
	var ok, next atomic.Int64
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if f(next.Add(1)) {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(ok.Load()) / time.Since(start).Seconds()
}

// connectStatusQuiet is connectStatus without a testing.T, for load loops: 0 on error.
func connectStatusQuiet(proxy, token, authority string) int {
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		return 0
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n", authority, authority,
		base64.StdEncoding.EncodeToString([]byte("default:"+token)))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
