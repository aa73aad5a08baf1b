package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/sluice-egress/sluice/gateway"
)

// ServeGateways runs the two bench gateways from the files Start wrote into dir, in the
// process that calls it (the harness re-run as a child), until in reaches its end (the
// parent closed it or died). It first writes "proxy ADDR scan ADDR" as one line to out;
// then, for each line "free" read from in, it returns the memory it no longer uses to
// the system, so that a reading of its RSS starts from what is live, and answers
// "freed heap H stack S goroutines G" (bytes in use, after a collection). When
// heapProfile is not empty, each "free" also writes the heap profile to it, so that
// the last one holds what the idle tunnels keep alive.
func ServeGateways(dir string, in io.Reader, out io.Writer, heapProfile string) error {
	if os.Getenv("GOGC") == "" { // as sluice serve does
		debug.SetGCPercent(gateway.GCPercent)
	}
	gw, gwScan, err := newGateways(dir)
	if err != nil {
		return err
	}
	proxy, err := serve(gw)
	if err != nil {
		return err
	}
	scan, err := serve(gwScan)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(out, "proxy %s scan %s\n", proxy, scan); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if sc.Text() == "free" {
			debug.FreeOSMemory()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if heapProfile != "" {
				if err := writeHeapProfile(heapProfile); err != nil {
					return err
				}
			}
			fmt.Fprintf(out, "freed heap %d stack %d goroutines %d\n", ms.HeapInuse, ms.StackInuse, runtime.NumGoroutine())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(gw.Shutdown(ctx), gwScan.Shutdown(ctx))
}

func writeHeapProfile(file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	err = pprof.Lookup("heap").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// child is the process that runs ServeGateways.
type child struct {
	cmd              *exec.Cmd
	stdin            io.WriteCloser
	stdout           *bufio.Reader
	done             chan error
	proxy, scanProxy string
}

// startChild starts argv with dir appended and waits for the gateways' addresses.
func startChild(argv []string, dir string) (*child, error) {
	cmd := exec.Command(argv[0], append(argv[1:len(argv):len(argv)], dir)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("bench: gateway process: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("bench: gateway process: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start the gateway process %s: %w", argv[0], err)
	}
	c := &child{cmd: cmd, stdin: stdin, stdout: bufio.NewReader(stdout), done: make(chan error, 1)}
	line, err := c.stdout.ReadString('\n')
	go func() { c.done <- cmd.Wait() }()
	if _, err2 := fmt.Sscanf(strings.TrimSpace(line), "proxy %s scan %s", &c.proxy, &c.scanProxy); err != nil || err2 != nil {
		c.stop()
		return nil, fmt.Errorf("bench: the gateway process did not say where it listens (%q): %v", line, errors.Join(err, err2))
	}
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// memStats is the gateways' process's memory after a collection.
type memStats struct{ heap, stack, goroutines int64 }

// free has the child return its unused memory to the system (debug.FreeOSMemory) and
// say what is still in use.
func (c *child) free() (memStats, error) {
	var m memStats
	if _, err := io.WriteString(c.stdin, "free\n"); err != nil {
		return m, fmt.Errorf("bench: gateway process: %w", err)
	}
	line, err := c.stdout.ReadString('\n')
	if _, err2 := fmt.Sscanf(line, "freed heap %d stack %d goroutines %d", &m.heap, &m.stack, &m.goroutines); err != nil || err2 != nil {
		return m, fmt.Errorf("bench: gateway process answered %q to free: %v", line, errors.Join(err, err2))
	}
	return m, nil
}

// stop closes the child's stdin, which ends it, and waits for it; it kills a child
// still there after 10 s.
func (c *child) stop() error {
	c.stdin.Close()
	select {
	case err := <-c.done:
		if err != nil {
			return fmt.Errorf("bench: gateway process: %w", err)
		}
		return nil
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
		return errors.New("bench: the gateway process did not end within 10 s of its stdin closing: killed")
	}
}
