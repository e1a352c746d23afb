package kubelet

import (
	"bytes"
	"net/url"
	"testing"
	"time"
)

func TestLogSelectionSinceTailAndTimestamps(t *testing.T) {
	data := []byte("2026-12-01T10:00:00Z stdout F early\n" +
		"2026-12-01T10:00:05.5Z stderr P lo\n" +
		"2026-12-01T10:00:05.6Z stderr F ng\n" +
		"a line from before the CRI format\n" +
		"2026-12-01T10:00:09Z stdout F late\n" +
		"2026-12-01T10:00:10Z stdout F half-writ")
	recs, rest := parseRecords(data)
	if len(recs) != 5 || string(rest) != "2026-12-01T10:00:10Z stdout F half-writ" {
		t.Fatalf("parse: %d records, rest %q", len(recs), rest)
	}
	render := func(opts LogOptions, now time.Time) string {
		var b bytes.Buffer
		(&logWriter{w: &b, timestamps: opts.Timestamps, limit: opts.LimitBytes}).write(SelectRecords(recs, opts.since(now), opts.TailLines))
		return b.String()
	}
	now := time.Date(2026, 12, 1, 10, 0, 10, 0, time.UTC)
	for _, c := range []struct {
		query, want string
	}{
		{"", "early\nlong\na line from before the CRI format\nlate\n"},
		{"sinceSeconds=5", "long\nlate\n"},
		{"sinceSeconds=2", "late\n"},
		{"sinceTime=2026-12-01T10:00:05Z", "long\nlate\n"},
		{"tailLines=2", "a line from before the CRI format\nlate\n"},
		{"tailLines=3&sinceSeconds=6", "long\nlate\n"},
		{"tailLines=0", ""},
		{"timestamps=true&sinceSeconds=5", "2026-12-01T10:00:05.5Z long\n2026-12-01T10:00:09Z late\n"},
		{"limitBytes=7", "early\nl"},
	} {
		q, _ := url.ParseQuery(c.query)
		opts, err := ParseLogOptions(q)
		if err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		if got := render(opts, now); got != c.want {
			t.Errorf("%s: got %q, want %q", c.query, got, c.want)
		}
	}
	for _, bad := range []string{"sinceTime=yesterday", "sinceSeconds=5&sinceTime=2026-12-01T10:00:05Z"} {
		q, _ := url.ParseQuery(bad)
		if _, err := ParseLogOptions(q); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
