package reload

import (
	"log/slog"
	"sync/atomic"
)

// Swap is a reload in two steps: Load builds everything the file asks for, or
// fails and changes nothing; Apply installs what Load built and cannot fail.
// Reload runs both, one reload at a time when a Watcher calls it.
type Swap[T any] struct {
	// Path is the file.
	Path string
	// Load reads the file and builds what it asks for; an error keeps what
	// is in force.
	Load func(path string) (T, error)
	// RestartOnly, when set, names what differs between what is in force
	// and next but applies only after a restart (logged as such).
	RestartOnly func(cur, next T) []string
	// Apply installs next, once it is Current, and returns key-value pairs
	// for the log line that says it was reloaded.
	Apply func(next T) []any
	// Logger nil: slog.Default().
	Logger *slog.Logger

	current atomic.Pointer[T]
}

// Store sets what is in force without applying it (at start-up).
func (s *Swap[T]) Store(v T) { s.current.Store(&v) }

// Current is what is in force: the last reload's, or what Store set.
func (s *Swap[T]) Current() (v T, ok bool) {
	if p := s.current.Load(); p != nil {
		return *p, true
	}
	return v, false
}

func (s *Swap[T]) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// Reload loads the file and applies it; on failure what is in force stays.
func (s *Swap[T]) Reload(why string) error {
	next, err := s.Load(s.Path)
	if err != nil {
		s.logger().Error("policy reload failed: keeping the previous policy", "why", why, "err", err)
		return err
	}
	if cur, ok := s.Current(); ok && s.RestartOnly != nil {
		if keys := s.RestartOnly(cur, next); len(keys) > 0 {
			s.logger().Warn("policy reloaded, but these settings apply only after a restart", "keys", keys)
		}
	}
	s.Store(next)
	var attrs []any
	if s.Apply != nil {
		attrs = s.Apply(next)
	}
	s.logger().Info("policy reloaded", append([]any{"why", why}, attrs...)...)
	return nil
}
