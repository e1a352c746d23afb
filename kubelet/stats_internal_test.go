package kubelet

import (
	"testing"
	"time"
)

func TestCPURate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cases := []struct {
		name      string
		prev, cur statsSample
		want      uint64
		wantOK    bool
	}{
		{"half a core over 10s", statsSample{time: t0, cpuNanos: 1e9}, statsSample{time: t0.Add(10 * time.Second), cpuNanos: 6e9}, 5e8, true},
		{"two cores over 2s", statsSample{time: t0, cpuNanos: 0}, statsSample{time: t0.Add(2 * time.Second), cpuNanos: 4e9}, 2e9, true},
		{"no earlier sample", statsSample{}, statsSample{time: t0, cpuNanos: 5}, 0, false},
		{"no time between", statsSample{time: t0, cpuNanos: 1}, statsSample{time: t0, cpuNanos: 2}, 0, false},
		{"counter went back", statsSample{time: t0, cpuNanos: 9e9}, statsSample{time: t0.Add(time.Second), cpuNanos: 1e9}, 0, false},
	}
	for _, c := range cases {
		got, ok := cpuRate(c.prev, c.cur)
		if got != c.want || ok != c.wantOK {
			t.Errorf("%s: cpuRate = %d, %v; want %d, %v", c.name, got, ok, c.want, c.wantOK)
		}
	}
}
