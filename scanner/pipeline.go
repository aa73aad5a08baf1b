package scanner

import (
	"context"
	"io"
	"mime"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// A JSON body's strings are inspected while the rest of the body arrives.
// A scan is store and forward: nothing of a body goes on before all of it
// was inspected. Reading a 1 MiB upload from the sandbox takes about as
// long as forwarding it, and inspecting it after the last byte came made
// the client wait for the two one after the other. So the JSON walk reads
// the body itself (jsonInput's fill mode), hands the groups it has cut to
// the pipeline a batch at a time, and workers on the cores no other scan is
// using inspect them meanwhile. When the body is in, the scan inspects what
// is left with every core it may use. The verdict still waits for all of
// it; only the waiting is shorter.
//
// A body that turns out not to be one JSON value, or to be over the size
// limit, is inspected again from the start as before: what the pipeline
// found is dropped.

// pipelined reports whether req's body is read through the pipeline: JSON
// by its type, not compressed (a compressed one is walked as it is
// decompressed, streamJSON).
func pipelined(req *Request) bool {
	if req == nil || req.Header == nil || len(contentEncodings(req.Header)) > 0 {
		return false
	}
	mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	return jsonType(mt)
}

// pipeline inspects the groups of one body in jobs, in the order they
// were cut, and gives their findings in that order.
type pipeline struct {
	s      *Scanner
	parent context.Context
	req    *Request
	sh     *inspectShared
	head   []*segment // the URL's and headers' groups: the first job
	batch  int        // text bytes a job holds at least

	// Set at the first job: a short body makes none, and costs nothing more
	// than before.
	ctx     context.Context
	cancel  context.CancelFunc
	workers int // started
	wg      sync.WaitGroup
	reading atomic.Bool  // the body is still being read
	busy    atomic.Int32 // workers inspecting a job now

	mu       sync.Mutex
	more     sync.Cond // on mu: a job was queued, or the queue closed
	queue    []pipeJob
	closed   bool
	found    [][]Finding // by job
	done     int         // jobs inspected to their end
	first    error       // the error the scan fails with
	panicked any
}

type pipeJob struct {
	i    int
	segs []*segment
}

// pipeBatch is the least text a job holds: enough that a job costs far
// more than handing it over.
const pipeBatch = 64 << 10

// maxInspectParts bounds the goroutines that inspect one body.
const maxInspectParts = 4

// pipeJobBytes is the least text of a job for a body of at most maxBody
// bytes: pipeBatch, or more, so that a body makes a few hundred jobs at most.
func pipeJobBytes(maxBody int64) int { return max(pipeBatch, int(maxBody/256)) }

func (s *Scanner) newPipeline(ctx context.Context, req *Request, head []*segment, maxBody int64) *pipeline {
	return s.newPipelineWith(ctx, req, s.newInspectShared(req), head, pipeJobBytes(maxBody))
}

// newPipelineWith is a pipeline whose groups share sh, of jobs of batch bytes.
func (s *Scanner) newPipelineWith(ctx context.Context, req *Request, sh *inspectShared, head []*segment, batch int) *pipeline {
	p := &pipeline{s: s, parent: ctx, ctx: ctx, req: req, sh: sh, head: head, batch: batch}
	p.more.L = &p.mu
	return p
}

// read reads the body from r into buf (as readInto does) while walking it
// as JSON; the groups it cuts go to the pipeline as they come. It returns
// the body, the groups not yet handed over, and whether the body was one
// JSON value. The whole body is read whatever the walk found.
func (p *pipeline) read(r io.Reader, buf []byte, ar *scanArena) (body []byte, tail []*segment, ok bool, err error) {
	in := &jsonInput{b: buf[:0], r: r, size: cap(buf), fill: true, emit: p.add, batch: p.batch}
	p.reading.Store(true)
	defer p.reading.Store(false)
	tail, ok = jsonWalk(in, nil, ar)
	if in.err != nil {
		return in.b, nil, false, in.err
	}
	if in.r == nil {
		return in.b, tail, ok, nil
	}
	// The walk stopped at what is no JSON value: the rest is read all the same.
	body, err = readInto(in.r, in.b)
	return body, nil, false, err
}

// add queues segs as the next job; the first also queues the head and
// starts the workers the idle cores allow.
func (p *pipeline) add(segs []*segment) {
	p.mu.Lock()
	first := p.cancel == nil
	if first {
		p.ctx, p.cancel = context.WithCancel(p.parent)
		if len(p.head) > 0 {
			// A copy: a job's groups are let go as they are inspected
			// (inspectGroups), and an abandoned pipeline's caller
			// inspects its own.
			p.push(slices.Clone(p.head))
		}
	}
	p.push(segs)
	p.mu.Unlock()
	if first {
		// The scan's own goroutine is reading: the workers get the cores
		// the running scans leave.
		p.start(runtime.GOMAXPROCS(0) - int(p.s.running.Load()) - 1)
	}
}

// push queues a job (p.mu held).
func (p *pipeline) push(segs []*segment) {
	p.queue = append(p.queue, pipeJob{len(p.found), segs})
	p.found = append(p.found, nil)
	p.more.Signal()
}

// next waits for a job; false: the queue is closed and empty.
func (p *pipeline) next() (pipeJob, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.queue) == 0 && !p.closed {
		p.more.Wait()
	}
	if len(p.queue) == 0 {
		return pipeJob{}, false
	}
	j := p.queue[0]
	p.queue[0] = pipeJob{}
	p.queue = p.queue[1:]
	return j, true
}

// close ends the queue: the workers stop once it is empty.
func (p *pipeline) close() {
	p.mu.Lock()
	p.closed = true
	p.more.Broadcast()
	p.mu.Unlock()
}

// start starts up to n more workers, maxInspectParts in all with the
// scan's own goroutine.
func (p *pipeline) start(n int) {
	for ; n > 0 && p.workers < maxInspectParts-1; n-- {
		p.workers++
		p.wg.Go(p.work)
	}
}

// work inspects jobs until there are none. A panic ends the scan: it is
// raised again in the scan's own goroutine, where the gateway recovers it.
func (p *pipeline) work() {
	defer func() {
		if r := recover(); r != nil {
			p.mu.Lock()
			if p.panicked == nil {
				p.panicked = r
			}
			p.mu.Unlock()
			p.cancel() // the others drop the rest
		}
	}()
	for {
		j, ok := p.next()
		if !ok {
			return
		}
		if p.ctx.Err() != nil {
			continue // failed, out of time or dropped: finish sees the job not done
		}
		found, err := p.inspect(j.segs)
		if p.reading.Load() {
			p.s.earlyJobs.Add(1)
		}
		p.mu.Lock()
		if err == nil {
			p.found[j.i] = found
			p.done++
		} else if p.first == nil {
			p.first = err
			p.cancel()
		}
		p.mu.Unlock()
	}
}

// inspect inspects one job's groups, counted among the running scans
// while it does: a worker waiting for a body that trickles in holds no core.
func (p *pipeline) inspect(segs []*segment) ([]Finding, error) {
	p.s.running.Add(1)
	p.busy.Add(1)
	defer func() {
		p.busy.Add(-1)
		p.s.running.Add(-1)
	}()
	return p.s.inspectGroups(p.ctx, p.req, segs, p.sh)
}

// finish inspects tail and what is still queued, on the cores the other
// scans leave, and returns every job's findings in order.
func (p *pipeline) finish(tail []*segment) ([]Finding, error) {
	if p.cancel == nil {
		// Too short a body for a job: inspected as any other (inspectWith
		// spreads only what is two jobs long, so it does not come back).
		return p.s.inspectWith(p.parent, p.req, append(p.head, tail...), p.sh)
	}
	defer p.cancel()
	if len(tail) > 0 {
		p.add(tail)
	}
	p.close()
	others := int(p.s.running.Load() - p.busy.Load())
	p.start(min(runtime.GOMAXPROCS(0)-others, maxInspectParts) - 1 - p.workers)
	p.wg.Go(p.work) // the scan's own share, under the same recover
	p.wg.Wait()
	switch {
	case p.panicked != nil:
		panic(p.panicked)
	case p.first != nil:
		return nil, p.first
	case p.done != len(p.found):
		// Jobs skipped once the scan ran out of time: a scan that did not
		// inspect everything never passes.
		return nil, ErrTimeout
	}
	n := 0
	for _, f := range p.found {
		n += len(f)
	}
	out := make([]Finding, 0, n)
	for _, f := range p.found {
		out = append(out, f...)
	}
	return out, nil
}

// abandon stops the pipeline and drops what it found: the body is
// inspected again as a whole.
func (p *pipeline) abandon() {
	if p.cancel == nil {
		return
	}
	p.cancel()
	p.close()
	p.wg.Wait()
}
