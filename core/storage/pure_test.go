package storage

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

func TestContinueToken(t *testing.T) {
	prefix := "/registry/pods/"
	tok, err := encodeContinue("/registry/pods/ns/b\x00", prefix, 42)
	if err != nil {
		t.Fatal(err)
	}
	key, rev, err := decodeContinue(tok, prefix)
	if err != nil || key != "/registry/pods/ns/b\x00" || rev != 42 {
		t.Fatalf("round trip = %q, %d, %v", key, rev, err)
	}
	if _, err := encodeContinue("/registry/nodes/x", prefix, 1); err == nil {
		t.Fatal("a key outside the prefix was encoded")
	}
	enc := func(v any) string {
		data, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(data)
	}
	bad := map[string]string{
		"not base64":    "%%%",
		"not json":      base64.RawURLEncoding.EncodeToString([]byte("{")),
		"wrong version": enc(continueToken{APIVersion: "v9", ResourceVersion: 1, StartKey: "a"}),
		"no revision":   enc(continueToken{APIVersion: continueAPIVersion, StartKey: "a"}),
		"no start key":  enc(continueToken{APIVersion: continueAPIVersion, ResourceVersion: 3}),
	}
	for name, tok := range bad {
		if _, _, err := decodeContinue(tok, prefix); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}

func TestParseRV(t *testing.T) {
	cases := []struct {
		in      string
		want    int64
		invalid bool
	}{
		{"", 0, false}, {"0", 0, false}, {"17", 17, false},
		{"-1", 0, true}, {"abc", 0, true}, {"1.5", 0, true},
	}
	for _, tc := range cases {
		got, err := parseRV(tc.in)
		if tc.invalid != errors.Is(err, ErrInvalid) || got != tc.want {
			t.Errorf("parseRV(%q) = %d, %v", tc.in, got, err)
		}
	}
}

func TestCheckPreconditions(t *testing.T) {
	obj := &corev1.Pod{}
	obj.UID, obj.ResourceVersion = "u1", "5"
	u1, u2 := types.UID("u1"), types.UID("u2")
	rv5, rv4 := "5", "4"
	cases := []struct {
		name     string
		pre      *Preconditions
		conflict bool
	}{
		{"none", nil, false},
		{"empty", &Preconditions{}, false},
		{"uid ok", &Preconditions{UID: &u1}, false},
		{"uid wrong", &Preconditions{UID: &u2}, true},
		{"rv ok", &Preconditions{ResourceVersion: &rv5}, false},
		{"rv stale", &Preconditions{ResourceVersion: &rv4}, true},
		{"both ok", &Preconditions{UID: &u1, ResourceVersion: &rv5}, false},
	}
	for _, tc := range cases {
		err := checkPreconditions("/registry/pods/ns/a", tc.pre, obj)
		if errors.Is(err, ErrConflict) != tc.conflict || (!tc.conflict && err != nil) {
			t.Errorf("%s: got %v", tc.name, err)
		}
	}
}

func TestRing(t *testing.T) {
	r := ring{buf: make([]*event, 3)}
	revs := func(es []*event) []int64 {
		var out []int64
		for _, e := range es {
			out = append(out, e.rev)
		}
		return out
	}
	for _, rev := range []int64{2, 4, 6} {
		if ev := r.push(&event{rev: rev}); ev != nil {
			t.Fatalf("push %d evicted %d before the ring was full", rev, ev.rev)
		}
	}
	if ev := r.push(&event{rev: 8}); ev == nil || ev.rev != 2 {
		t.Fatalf("push into a full ring evicted %v, want rev 2", ev)
	}
	cases := map[int64][]int64{0: {4, 6, 8}, 4: {6, 8}, 5: {6, 8}, 8: nil, 100: nil}
	for since, want := range cases {
		if got := revs(r.since(since)); !slices.Equal(got, want) {
			t.Errorf("since(%d) = %v, want %v", since, got, want)
		}
	}
}

func podEvent(t *testing.T, typ mvccpb.Event_EventType, cur, prev *corev1.Pod) *event {
	t.Helper()
	c := newCodec(func() runtime.Object { return &corev1.Pod{} }, false)
	kv := func(p *corev1.Pod, rev, create int64) *mvccpb.KeyValue {
		if p == nil {
			return &mvccpb.KeyValue{Key: []byte("/registry/pods/ns/a"), ModRevision: rev}
		}
		data, err := c.encode(p.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		return &mvccpb.KeyValue{Key: []byte("/registry/pods/ns/a"), Value: data, ModRevision: rev, CreateRevision: create}
	}
	ev := &clientv3.Event{Type: typ, Kv: kv(cur, 10, 9)}
	if cur != nil && prev == nil {
		ev.Kv.CreateRevision = 10
	}
	if prev != nil {
		ev.PrevKv = kv(prev, 9, 9)
	}
	return newEvent(ev, c)
}

func TestConvert(t *testing.T) {
	web := &corev1.Pod{}
	web.Name, web.Labels = "a", map[string]string{"app": "web"}
	db := web.DeepCopy()
	db.Labels = map[string]string{"app": "db"}
	isWeb := func(o runtime.Object) bool { return o.(*corev1.Pod).Labels["app"] == "web" }
	put, del := mvccpb.PUT, mvccpb.DELETE
	cases := []struct {
		name      string
		typ       mvccpb.Event_EventType
		cur, prev *corev1.Pod
		pred      Predicate
		want      watch.EventType // "" = nothing
		wantApp   string
		wantRV    string
	}{
		{"create, no predicate", put, web, nil, nil, watch.Added, "web", "10"},
		{"create matching", put, web, nil, isWeb, watch.Added, "web", "10"},
		{"create not matching", put, db, nil, isWeb, "", "", ""},
		{"update, no predicate", put, db, web, nil, watch.Modified, "db", "10"},
		{"update staying in", put, web, web, isWeb, watch.Modified, "web", "10"},
		{"update entering", put, web, db, isWeb, watch.Added, "web", "10"},
		{"update leaving: DELETED with the new object", put, db, web, isWeb, watch.Deleted, "db", "10"},
		{"update staying out", put, db, db, isWeb, "", "", ""},
		{"delete matching: last state at the deletion's rv", del, nil, web, isWeb, watch.Deleted, "web", "10"},
		{"delete not matching", del, nil, db, isWeb, "", "", ""},
	}
	for _, tc := range cases {
		ev, ok, err := convert(podEvent(t, tc.typ, tc.cur, tc.prev), tc.pred)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.want == "" {
			if ok {
				t.Errorf("%s: got %s, want nothing", tc.name, ev.Type)
			}
			continue
		}
		p, _ := ev.Object.(*corev1.Pod)
		if !ok || ev.Type != tc.want || p == nil || p.Labels["app"] != tc.wantApp || p.ResourceVersion != tc.wantRV {
			t.Errorf("%s: got ok=%v %s %+v, want %s app=%s rv=%s", tc.name, ok, ev.Type, p, tc.want, tc.wantApp, tc.wantRV)
		}
	}
}
