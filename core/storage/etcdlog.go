package storage

import (
	"context"
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
}

// benignEtcdWarnings are printed by every embedded start and say nothing about
// wasmkube's setup: the single member serves its client port on loopback only, and
// etcd authentication (where simple tokens matter) is not used.
var benignEtcdWarnings = map[string]bool{
	"Running http and grpc server on single port. This is not recommended for production.": true,
	"simple token is not cryptographically signed":                                         true,
}

func newEtcdLogger(log *slog.Logger, closing *atomic.Bool) *zap.Logger {
	return zap.New(&slogCore{log: log.With("component", "etcd"), closing: closing})
}

func (c *slogCore) Enabled(l zapcore.Level) bool { return l >= zapcore.WarnLevel }

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	return &slogCore{log: c.log, fields: append(append([]zapcore.Field{}, c.fields...), fields...), closing: c.closing}
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
	c.log.Log(context.Background(), level, e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }
