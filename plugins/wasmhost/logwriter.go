package wasmhost

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
)

// logSink is an instance's log: host `log` calls and guest stdout/stderr lines, tagged
// with the plugin name and capped per call. It references no module or pool, so that the
// runtime (which holds the guest's stdout writer) never keeps a dropped plugin alive.
type logSink struct {
	log     *slog.Logger
	plugin  string
	mu      sync.Mutex
	lines   int
	dropped int
}

func (s *logSink) line(level slog.Level, msg string) {
	s.mu.Lock()
	s.lines++
	keep := s.lines <= maxLogLines
	if !keep {
		s.dropped++
	}
	s.mu.Unlock()
	if keep {
		s.log.Log(context.Background(), level, msg, "plugin", s.plugin)
	}
}

// endCall reports dropped lines and resets the per-call cap.
func (s *logSink) endCall() {
	s.mu.Lock()
	dropped := s.dropped
	s.lines, s.dropped = 0, 0
	s.mu.Unlock()
	if dropped > 0 {
		s.log.Warn("plugin log lines dropped (limit per call)", "plugin", s.plugin, "dropped", dropped, "limit", maxLogLines)
	}
}

// lineWriter turns a guest's stdout or stderr into log lines.
type lineWriter struct {
	mu    sync.Mutex
	sink  *logSink
	level slog.Level
	buf   []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.sink.line(w.level, Truncate(w.buf[:i], maxLogLine))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > maxLogLine {
		w.sink.line(w.level, Truncate(w.buf, maxLogLine))
		w.buf = w.buf[:0]
	}
	return len(p), nil
}
