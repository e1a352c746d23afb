package explorer

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
)

type noCluster struct{}

func (noCluster) Pod(context.Context, string, string) (string, string, bool, error) {
	return "", "", false, nil
}
func (noCluster) NodeRecords(context.Context, string) ([]explorerv1.Record, error) { return nil, nil }

func serveWith(h *Handler, allow func(Access) bool) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.Serve(w, r, func(_ context.Context, a Access) (bool, string) { return allow(a), "" })
	}))
}

// TestWatchResumesOrSaysGone: a server-sent events stream resumes after Last-Event-ID with
// the records after it, each with its ID; a resume point the ring overwrote is 410 Gone, as
// a watch from a compacted resourceVersion is.
func TestWatchResumesOrSaysGone(t *testing.T) {
	ring := NewRing(4)
	for _, p := range []string{"a", "b", "c", "d", "e", "f"} {
		ring.Append(swap(p)) // IDs 1..6; the ring holds 3..6
	}
	srv := serveWith(&Handler{Ring: ring, Cluster: noCluster{}}, func(Access) bool { return true })
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodGet, srv.URL+explorerv1.PathPrefix+"/records?watch=true", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", "4")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	br := bufio.NewReader(resp.Body)
	event := func() (id, data string) {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			case line == "" && data != "":
				return id, data
			}
		}
	}
	for _, want := range []string{"5", "6"} {
		id, data := event()
		var rec explorerv1.Record
		if err := json.Unmarshal([]byte(data), &rec); err != nil || id != want || rec.ID != mustID(t, want) {
			t.Fatalf("event id %q data %s (%v), want record %s", id, data, err, want)
		}
	}
	ring.Append(swap("g"))
	if id, _ := event(); id != "7" {
		t.Fatalf("live event %s, want 7", id)
	}

	resp2, err := http.Get(srv.URL + explorerv1.PathPrefix + "/records?watch=true&resourceVersion=1")
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusGone {
		t.Fatalf("a watch from an overwritten ID: %s, want 410 Gone", resp2.Status)
	}
}

func mustID(t *testing.T, s string) uint64 {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPushIsCheckedAndAuthorized: a pushed record must carry the field its type names
// (400 naming the item), and only who may create records may push.
func TestPushIsCheckedAndAuthorized(t *testing.T) {
	ring := NewRing(4)
	allowed := true
	srv := serveWith(&Handler{Ring: ring, Cluster: noCluster{}}, func(a Access) bool { return allowed || a.Verb != "create" })
	defer srv.Close()
	post := func(body string) *http.Response {
		resp, err := http.Post(srv.URL+explorerv1.PathPrefix+"/records", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post(`{"items":[{"type":"Swap","component":"scheduler","swap":{"tier":"file","result":"Applied"}},{"type":"Swap","component":"scheduler"}]}`)
	var st struct{ Message string }
	_ = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(st.Message, "items[1]") || !strings.Contains(st.Message, "swap") || ring.Len() != 0 {
		t.Fatalf("a Swap record without its swap: %d %q, ring %d; want 400 naming items[1] and nothing kept", resp.StatusCode, st.Message, ring.Len())
	}
	if resp := post(`{"items":[{"type":"Swap","component":"scheduler","swap":{"tier":"file","result":"Applied"}}]}`); resp.StatusCode != http.StatusNoContent || ring.Len() != 1 {
		t.Fatalf("a valid push: %s, ring %d", resp.Status, ring.Len())
	}
	allowed = false
	if resp := post(`{"items":[]}`); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a push without create on records: %s, want 403", resp.Status)
	}
}
