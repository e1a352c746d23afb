package kubelet

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// LogOptions are the query parameters of /containerLogs.
type LogOptions struct {
	Follow, Previous, Timestamps bool
	TailLines, LimitBytes        int64 // -1: unset
	SinceSeconds                 int64
	SinceTime                    time.Time // zero: unset
}

// ParseLogOptions reads and checks the query of a /containerLogs request.
func ParseLogOptions(q map[string][]string) (LogOptions, error) {
	o := LogOptions{TailLines: -1, LimitBytes: -1}
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	var err error
	parseBool := func(name string, dst *bool) {
		if v := get(name); v != "" && err == nil {
			*dst, err = strconv.ParseBool(v)
			if err != nil {
				err = fmt.Errorf("query parameter %s: %q is not a boolean", name, v)
			}
		}
	}
	parseInt := func(name string, dst *int64) {
		if v := get(name); v != "" && err == nil {
			n, perr := strconv.ParseInt(v, 10, 64)
			if perr != nil || n < 0 {
				err = fmt.Errorf("query parameter %s: %q is not a non-negative integer", name, v)
			}
			*dst = n
		}
	}
	parseBool("follow", &o.Follow)
	parseBool("previous", &o.Previous)
	parseBool("timestamps", &o.Timestamps)
	parseInt("tailLines", &o.TailLines)
	parseInt("limitBytes", &o.LimitBytes)
	parseInt("sinceSeconds", &o.SinceSeconds)
	if v := get("sinceTime"); v != "" && err == nil {
		if o.SinceTime, err = time.Parse(time.RFC3339, v); err != nil {
			err = fmt.Errorf("query parameter sinceTime: %q is not an RFC 3339 time", v)
		}
	}
	if err == nil && o.SinceSeconds > 0 && !o.SinceTime.IsZero() {
		err = fmt.Errorf("query parameters sinceSeconds and sinceTime: at most one may be given")
	}
	return o, err
}

// since is the earliest record time to serve, or zero.
func (o LogOptions) since(now time.Time) time.Time {
	if o.SinceSeconds > 0 {
		return now.Add(-time.Duration(o.SinceSeconds) * time.Second)
	}
	return o.SinceTime
}

// TailOffset returns the offset in data where its last n lines start.
func TailOffset(data []byte, n int64) int {
	if n < 0 {
		return 0
	}
	if n == 0 {
		return len(data)
	}
	end := len(data)
	if end > 0 && data[end-1] == '\n' {
		end--
	}
	for i := end - 1; i >= 0; i-- {
		if data[i] == '\n' {
			n--
			if n == 0 {
				return i + 1
			}
		}
	}
	return 0
}

// parseRecords parses the complete lines of a CRI log (the trailing unterminated bytes are
// returned as rest). A line that is not a CRI record (a log written before the kubelet used
// the format) is kept as a full line without a time.
func parseRecords(data []byte) (recs []runtime.LogRecord, rest []byte) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return recs, data
		}
		line := data[:i]
		data = data[i+1:]
		r, err := runtime.ParseLogRecord(line)
		if err != nil {
			r = runtime.LogRecord{Stream: runtime.StreamStdout, Content: line}
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// SelectRecords keeps the records at or after since (when set), then the last tail
// lines (tail < 0: all). A line is a run of partial records ended by a full one.
func SelectRecords(recs []runtime.LogRecord, since time.Time, tail int64) []runtime.LogRecord {
	if !since.IsZero() {
		// An untimed line predates the CRI format, so it is older than any since.
		kept := recs[:0:0]
		for _, r := range recs {
			if !r.Time.IsZero() && !r.Time.Before(since) {
				kept = append(kept, r)
			}
		}
		recs = kept
	}
	if tail < 0 {
		return recs
	}
	start := len(recs)
	for n := int64(0); start > 0; start-- {
		if !recs[start-1].Partial {
			if n == tail {
				break
			}
			n++
		}
	}
	return recs[start:]
}

// logWriter writes records as `kubectl logs` prints them: the content, a newline after a
// full record, the record's time first with timestamps, and at most limit bytes.
type logWriter struct {
	w          io.Writer
	timestamps bool
	limit      int64 // -1: none
	written    int64
	midLine    bool
	buf        []byte
}

// write writes recs and reports whether more may follow (the client is there and the
// byte limit not reached).
func (l *logWriter) write(recs []runtime.LogRecord) bool {
	l.buf = l.buf[:0]
	for _, r := range recs {
		if l.timestamps && !l.midLine {
			l.buf = append(l.buf, r.Time.UTC().Format(time.RFC3339Nano)...)
			l.buf = append(l.buf, ' ')
		}
		l.buf = append(l.buf, r.Content...)
		if !r.Partial {
			l.buf = append(l.buf, '\n')
		}
		l.midLine = r.Partial
	}
	b := l.buf
	if l.limit >= 0 && l.written+int64(len(b)) > l.limit {
		b = b[:l.limit-l.written]
	}
	if len(b) > 0 {
		n, err := l.w.Write(b)
		l.written += int64(n)
		if fl, ok := l.w.(http.Flusher); ok {
			fl.Flush()
		}
		if err != nil {
			return false
		}
	}
	return l.limit < 0 || l.written < l.limit
}

func (k *Kubelet) serveLogs(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		http.Error(w, "path must be /containerLogs/<namespace>/<pod>/<container>", http.StatusBadRequest)
		return
	}
	ns, name, container := parts[0], parts[1], parts[2]
	opts, err := ParseLogOptions(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pod := k.podByName(ns, name)
	if pod == nil {
		http.Error(w, fmt.Sprintf("pod %s/%s is not on node %s", ns, name, k.opts.NodeName), http.StatusNotFound)
		return
	}
	cs, err := k.rt.ListContainers(r.Context(), string(pod.UID))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var mine []runtime.ContainerStatus
	for _, c := range cs {
		if c.Name == container {
			mine = append(mine, c)
		}
	}
	sort.Slice(mine, func(i, j int) bool { return mine[i].Attempt > mine[j].Attempt })
	idx := 0
	if opts.Previous {
		idx = 1
	}
	if len(mine) <= idx {
		http.Error(w, MissingLogMessage(pod, container, opts.Previous), http.StatusBadRequest)
		return
	}
	c := mine[idx]
	f, err := os.Open(c.LogPath)
	if err != nil {
		http.Error(w, fmt.Sprintf("log of container %s: %v", container, err), http.StatusNotFound)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	data, _ := io.ReadAll(f)
	recs, rest := parseRecords(data)
	since := opts.since(time.Now())
	out := &logWriter{w: w, timestamps: opts.Timestamps, limit: opts.LimitBytes}
	if sel := SelectRecords(recs, since, opts.TailLines); len(sel) > 0 && !out.write(sel) {
		return
	}
	if !opts.Follow || opts.Previous {
		return
	}
	// Follow: stream the records the container appends until it stops and the file is drained.
	pending := append([]byte(nil), rest...)
	buf := make([]byte, 32<<10)
	rd := bufio.NewReader(f)
	lastCheck := time.Now()
	emit := func() bool {
		recs, rest := parseRecords(pending)
		pending = append(pending[:0], rest...)
		recs = SelectRecords(recs, since, -1)
		return len(recs) == 0 || out.write(recs)
	}
	for {
		n, err := rd.Read(buf)
		if n > 0 {
			pending = append(pending, buf[:n]...)
			if !emit() {
				return
			}
			continue
		}
		if err != nil && err != io.EOF {
			return
		}
		if time.Since(lastCheck) > 500*time.Millisecond {
			lastCheck = time.Now()
			st, err := k.rt.ContainerStatus(r.Context(), c.ID)
			if err != nil || st.State != runtime.ContainerRunning {
				// One last drain, then done.
				more, _ := io.ReadAll(rd)
				pending = append(pending, more...)
				emit()
				return
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// logTail is the content of the last n lines of the CRI log at path, at most max bytes
// (the end of the file), for a termination message that falls back to the log.
func logTail(path string, n int64, max int) []byte {
	data, _ := os.ReadFile(path)
	if len(data) > 64<<10 {
		data = data[len(data)-64<<10:]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	recs, _ := parseRecords(data)
	var b bytes.Buffer
	(&logWriter{w: &b, limit: -1}).write(SelectRecords(recs, time.Time{}, n))
	out := b.Bytes()
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}
