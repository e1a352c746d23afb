package storage

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// slogCore forwards the embedded etcd's zap log entries of level warn and above to
// the Backend's slog logger, so one process has one log stream. While the Backend shuts
// etcd down, etcd reports its own listeners closing as errors; those are expected and
// logged at debug level.
type slogCore struct {
	log     *slog.Logger
	fields  []zapcore.Field
	closing *atomic.Bool
	// fatal records the message of a fatal entry: etcd gives up (a failed WAL or database
	// write, a full disk when the reserve could not help). The logger ends only the
	// goroutine that logged it (zap's WriteThenGoexit) instead of the whole process, so
	// the API server stays up, serves reads from its watch caches and answers writes
	// with the reason (space.go).
	fatal *atomic.Pointer[string]
}

// benignEtcdWarnings are printed by every embedded start and say nothing about
// wasmkube's setup: the single member serves its client port on loopback only, and
// etcd authentication (where simple tokens matter) is not used.
var benignEtcdWarnings = map[string]bool{
	"Running http and grpc server on single port. This is not recommended for production.": true,
	"simple token is not cryptographically signed":                                         true,
}

// walPreallocFailed is etcd's message when its WAL file pipeline cannot allocate the next
// segment (go.etcd.io/etcd/server/v3/storage/wal/file_pipeline.go).
const walPreallocFailed = "failed to preallocate space when creating a new WAL"

func newEtcdLogger(log *slog.Logger, closing *atomic.Bool, fatal *atomic.Pointer[string]) *zap.Logger {
	return zap.New(&slogCore{log: log.With("component", "etcd"), closing: closing, fatal: fatal},
		zap.WithFatalHook(zapcore.WriteThenGoexit))
}

func (c *slogCore) Enabled(l zapcore.Level) bool { return l >= zapcore.WarnLevel }

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	return &slogCore{log: c.log, fields: append(append([]zapcore.Field{}, c.fields...), fields...), closing: c.closing, fatal: c.fatal}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	attrs := make([]any, 0, 2*len(enc.Fields))
	for k, v := range enc.Fields {
		attrs = append(attrs, k, v)
	}
	level := slog.LevelWarn
	switch {
	case c.closing.Load() || benignEtcdWarnings[e.Message]:
		level = slog.LevelDebug
	case e.Level >= zapcore.ErrorLevel:
		level = slog.LevelError
	}
	// etcd preallocates its next WAL segment ahead of need; when that fails the
	// preallocation is not tried again, and the next segment cut is fatal. It is taken
	// as fatal now, so that writes stop before etcd gets there.
	if (e.Level >= zapcore.FatalLevel || e.Message == walPreallocFailed) && c.fatal != nil {
		msg := e.Message
		if err, ok := enc.Fields["error"]; ok {
			msg = fmt.Sprintf("%s: %v", msg, err)
		}
		if e.Level >= zapcore.FatalLevel {
			c.fatal.Store(&msg) // a fatal error says more than a failed preallocation before it
		} else {
			c.fatal.CompareAndSwap(nil, &msg)
		}
		level = slog.LevelError
	}
	c.log.Log(context.Background(), level, e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }
