package runtime

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
	"time"
)

// Container logs are written in the CRI log format, one record per line:
//
//	2026-12-01T10:00:00.123456789Z stdout F a complete line
//	2026-12-01T10:00:00.223456789Z stderr P the first part of a line longer than the buffer
//
// as containerd's CRI plugin writes them and the upstream kubelet reads them, so that
// `kubectl logs --timestamps`, `--since` and `--since-time` have a time for every line.

// Stream names of a CRI log record.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

const (
	tagFull    = 'F'
	tagPartial = 'P'
	// maxLogLine is the longest line kept in one record (containerd's CRI uses 16 KiB);
	// a longer one is split into partial records.
	maxLogLine = 16 << 10
)

// LogRecord is one parsed line of a CRI log file.
type LogRecord struct {
	Time    time.Time
	Stream  string
	Partial bool   // the line goes on in the next record
	Content []byte // without the newline
}

var errNotCRI = errors.New("not a CRI log record")

// ParseLogRecord parses one line (without its newline) of a CRI log file.
func ParseLogRecord(line []byte) (LogRecord, error) {
	var r LogRecord
	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return r, errNotCRI
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return r, errNotCRI
	}
	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok || (string(stream) != StreamStdout && string(stream) != StreamStderr) {
		return r, errNotCRI
	}
	tag, content, _ := bytes.Cut(rest, []byte{' '})
	if len(tag) == 0 {
		return r, errNotCRI
	}
	r.Time, r.Stream, r.Content = t, string(stream), content
	r.Partial = tag[0] == tagPartial
	return r, nil
}

// LogWriter writes a container's output to a CRI log file. Each stream has its own line
// buffer; whole records are written under one lock, so stdout and stderr interleave by line.
type LogWriter struct {
	mu  sync.Mutex
	out *bufio.Writer
	dst io.Writer
	now func() time.Time
}

// NewLogWriter writes records to w.
func NewLogWriter(w io.Writer) *LogWriter {
	return &LogWriter{out: bufio.NewWriterSize(w, 32<<10), dst: w, now: time.Now}
}

// Stream returns the writer for stream (StreamStdout or StreamStderr). Closing it writes
// what is left of an unterminated last line as a full record.
func (l *LogWriter) Stream(stream string) io.WriteCloser {
	return &logStream{l: l, name: stream}
}

func (l *LogWriter) record(stream string, tag byte, content []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.out
	b.WriteString(l.now().UTC().Format(time.RFC3339Nano))
	b.WriteByte(' ')
	b.WriteString(stream)
	b.WriteByte(' ')
	b.WriteByte(tag)
	b.WriteByte(' ')
	b.Write(content)
	b.WriteByte('\n')
}

func (l *LogWriter) flush() {
	l.mu.Lock()
	_ = l.out.Flush()
	l.mu.Unlock()
}

type logStream struct {
	l    *LogWriter
	name string
	buf  []byte
}

// Write records every complete line of p at once and keeps the rest for the next write.
func (s *logStream) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.buf = append(s.buf, p...)
			for len(s.buf) >= maxLogLine {
				s.l.record(s.name, tagPartial, s.buf[:maxLogLine])
				s.buf = append(s.buf[:0], s.buf[maxLogLine:]...)
			}
			break
		}
		line := p[:i]
		if len(s.buf) > 0 {
			line = append(s.buf, line...)
			s.buf = s.buf[:0]
		}
		for len(line) > maxLogLine {
			s.l.record(s.name, tagPartial, line[:maxLogLine])
			line = line[maxLogLine:]
		}
		s.l.record(s.name, tagFull, line)
		p = p[i+1:]
	}
	// Every write reaches the file before Write returns: `kubectl logs -f` follows the file.
	s.l.flush()
	return n, nil
}

func (s *logStream) Close() error {
	if len(s.buf) > 0 {
		s.l.record(s.name, tagFull, s.buf)
		s.buf = nil
	}
	s.l.flush()
	return nil
}
