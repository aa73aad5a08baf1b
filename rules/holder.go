package rules

import "sync/atomic"

// Holder is the policy in force: an Engine swapped whole on reload. Requests on open
// tunnels meet the new engine from their next request on. Make it with NewHolder:
// without an engine, Identify identifies nobody and Decide must not be called.
type Holder struct {
	cur atomic.Pointer[Engine]
}

// NewHolder returns a Holder of e.
func NewHolder(e *Engine) *Holder {
	h := &Holder{}
	h.cur.Store(e)
	return h
}

// Engine returns the current engine; nil for a nil Holder.
func (h *Holder) Engine() *Engine {
	if h == nil {
		return nil
	}
	return h.cur.Load()
}

// Identify asks the current engine; without one (a nil Holder), nobody is
// identified.
func (h *Holder) Identify(user, token string) (Identity, error) {
	e := h.Engine()
	if e == nil {
		return Identity{}, ErrUnauthenticated
	}
	return e.Identify(user, token)
}

// Decide asks the current engine. The decision carries what it allows to be dialled,
// so it stays whole if the engine is swapped before the dial.
func (h *Holder) Decide(q Query) Decision { return h.cur.Load().Decide(q) }

// Swap installs e, carrying the registered runs and grants over (ShareRuns).
func (h *Holder) Swap(e *Engine) {
	e.ShareRuns(h.cur.Load())
	h.cur.Store(e)
}
