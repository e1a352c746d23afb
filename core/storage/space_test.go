package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestPlanSpace(t *testing.T) {
	const minFree, releaseAt, reserve = 100, 30, 50
	cases := []struct {
		name        string
		free        int64
		haveReserve bool
		want        spacePlan
	}{
		{"plenty, reserve kept", 500, true, spacePlan{}},
		{"plenty, reserve restored", 180, false, spacePlan{restoreReserve: true}},
		{"not enough to restore it without flapping", 179, false, spacePlan{}},
		{"below the minimum: writes refused", 99, true, spacePlan{refuseWrites: true}},
		{"nearly full: reserve released, deletes refused too", 29, true, spacePlan{refuseWrites: true, refuseDeletes: true, releaseReserve: true}},
		{"full without a reserve", 0, false, spacePlan{refuseWrites: true, refuseDeletes: true}},
		{"reserve released: its room is not for writes", 120, false, spacePlan{refuseWrites: true}},
		{"reserve released, room for it and writes", 150, false, spacePlan{}},
	}
	for _, c := range cases {
		if got := planSpace(c.free, minFree, releaseAt, reserve, c.haveReserve); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// etcd's backend quota: past it etcd raises its NOSPACE alarm and refuses puts; the store
// answers ErrNoSpace naming the alarm, reads and deletes still work, and once the objects
// are deleted the Backend compacts, defragments and disarms the alarm on its own, and
// writes resume. Nothing acknowledged is lost.
func TestNoSpaceAlarmRefusesWritesAndClears(t *testing.T) {
	b := embeddedFactory(t, Config{QuotaBackendBytes: 16 << 20})
	s := podStore(b)
	ctx := context.Background()
	big := strings.Repeat("x", 512<<10)
	var acked []string
	var err error
	for i := 0; i < 200; i++ {
		p := newPod("default", fmt.Sprintf("p%d", i), nil)
		p.Annotations = map[string]string{"big": big}
		if _, err = s.Create(ctx, Key("pods", "default", p.Name), p); err != nil {
			break
		}
		acked = append(acked, p.Name)
	}
	if !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), "NOSPACE") {
		t.Fatalf("after %d creates: %v, want ErrNoSpace naming the NOSPACE alarm", len(acked), err)
	}
	for _, name := range acked {
		if _, err := s.Get(ctx, Key("pods", "default", name)); err != nil {
			t.Fatalf("read %s under the alarm: %v", name, err)
		}
	}
	keep := acked[0]
	for _, name := range acked[1:] {
		if _, err := s.Delete(ctx, Key("pods", "default", name), nil); err != nil {
			t.Fatalf("delete %s under the alarm: %v", name, err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		p := newPod("default", "after", nil)
		if _, err = s.Create(ctx, Key("pods", "default", p.Name), p); err == nil {
			break
		}
		if !errors.Is(err, ErrNoSpace) || time.Now().After(deadline) {
			t.Fatalf("writes did not resume after the objects were deleted: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got, err := s.Get(ctx, Key("pods", "default", keep)); err != nil || got.(*corev1.Pod).Annotations["big"] != big {
		t.Fatalf("acknowledged %s after the alarm: %v", keep, err)
	}
}
