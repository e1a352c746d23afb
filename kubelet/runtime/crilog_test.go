package runtime

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestLogWriterWritesCRIRecords(t *testing.T) {
	var buf bytes.Buffer
	lw := NewLogWriter(&buf)
	at := time.Date(2026, 12, 1, 10, 0, 0, 5, time.UTC)
	lw.now = func() time.Time { return at }
	out, errw := lw.Stream(StreamStdout), lw.Stream(StreamStderr)
	_, _ = out.Write([]byte("one\ntw"))
	_, _ = errw.Write([]byte("oops\n"))
	_, _ = out.Write([]byte("o\nunterminated"))
	_ = out.Close()
	long := strings.Repeat("x", maxLogLine+3)
	_, _ = errw.Write([]byte(long + "\n"))
	ts := "2026-12-01T10:00:00.000000005Z"
	want := ts + " stdout F one\n" +
		ts + " stderr F oops\n" +
		ts + " stdout F two\n" +
		ts + " stdout F unterminated\n" +
		ts + " stderr P " + long[:maxLogLine] + "\n" +
		ts + " stderr F xxx\n"
	if got := buf.String(); got != want {
		t.Fatalf("log =\n%q\nwant\n%q", got, want)
	}
	for i, line := range strings.Split(strings.TrimSuffix(want, "\n"), "\n") {
		r, err := ParseLogRecord([]byte(line))
		if err != nil || !r.Time.Equal(at) {
			t.Fatalf("line %d: %+v %v", i, r, err)
		}
		if r.Partial != (i == 4) {
			t.Errorf("line %d partial = %v", i, r.Partial)
		}
	}
}

func TestParseLogRecordRejectsOtherLines(t *testing.T) {
	for _, line := range []string{"plain text", "2026-12-01T10:00:00Z stdin F x", "yesterday stdout F x", "2026-12-01T10:00:00Z stdout"} {
		if _, err := ParseLogRecord([]byte(line)); err == nil {
			t.Errorf("%q parsed as a CRI record", line)
		}
	}
	r, err := ParseLogRecord([]byte("2026-12-01T10:00:00Z stdout F "))
	if err != nil || len(r.Content) != 0 {
		t.Errorf("empty line: %+v %v", r, err)
	}
}
