package kubelet

import (
	"strings"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/kubelet/runtime"
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

// The summary lists pods by namespace and name and their containers by name, whatever the
// map order; a pod's figures are its containers' sums, and it has a CPU rate only when each
// of its containers has one.
func TestSummaryOrderAndSums(t *testing.T) {
	t0 := time.Unix(1000, 0)
	two := func(cpu0, cpu1, ws uint64) sampled {
		return sampled{prev: statsSample{time: t0, cpuNanos: cpu0}, cur: statsSample{time: t0.Add(time.Second), cpuNanos: cpu1, memUsage: ws + 10, memWS: ws}}
	}
	c := &statsCollector{node: "n1", containers: map[containerKey]*containerSeries{}}
	add := func(id, ns, pod, uid, ctr string, s sampled) {
		c.containers[id] = &containerSeries{sampled: s, pod: runtime.PodRef{Namespace: ns, Name: pod, UID: uid}, name: ctr, startedAt: t0}
	}
	add("c1", "default", "web", "u-web", "side", two(0, 1e8, 100))
	add("c2", "default", "web", "u-web", "app", two(0, 9e8, 200))
	add("c3", "a", "zeta", "u-zeta", "main", two(0, 5e8, 300))
	add("c4", "default", "db", "u-db", "main", two(0, 2e8, 400))
	add("c5", "default", "db", "u-db", "new", sampled{cur: statsSample{time: t0, cpuNanos: 7, memWS: 1}})
	for range 5 { // map order differs between runs; the summary must not
		sum := c.summary()
		var names []string
		for _, p := range sum.Pods {
			n := p.PodRef.Namespace + "/" + p.PodRef.Name + ":"
			for _, ct := range p.Containers {
				n += ct.Name + ","
			}
			names = append(names, n)
		}
		if got := strings.Join(names, " "); got != "a/zeta:main, default/db:main,new, default/web:app,side," {
			t.Fatalf("summary order: %s", got)
		}
		web := sum.Pods[2]
		if web.CPU.UsageNanoCores == nil || *web.CPU.UsageNanoCores != 1e9 || *web.CPU.UsageCoreNanoSeconds != 1e9 || *web.Memory.WorkingSetBytes != 300 {
			t.Fatalf("web pod sums: cpu %v, working set %d", web.CPU, *web.Memory.WorkingSetBytes)
		}
		if db := sum.Pods[1]; db.CPU.UsageNanoCores != nil || *db.CPU.UsageCoreNanoSeconds != 2e8+7 {
			t.Fatalf("db pod (one container sampled once): cpu %+v", db.CPU)
		}
	}
}
