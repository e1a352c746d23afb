package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestBenchSchedulerJSON(t *testing.T) {
	var b strings.Builder
	err := runSchedBench(&b, schedBenchOptions{nodes: 5, pods: 60, clients: 4, output: "json",
		leaseInterval: 10 * time.Second, hollowQPS: 100, timeout: 2 * time.Minute, logLevel: "error"})
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(b.String()), &res); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, b.String())
	}
	for _, k := range []string{"pods_per_second", "p50_ms", "p99_ms", "scheduled", "failed", "nodes", "pods"} {
		if _, ok := res[k]; !ok {
			t.Errorf("key %s missing from %s", k, b.String())
		}
	}
	if res["scheduled"].(float64) != 60 || res["failed"].(float64) != 0 || res["nodes"].(float64) != 5 || res["pods_per_second"].(float64) <= 0 {
		t.Fatalf("result %s", b.String())
	}
	if res["p99_ms"].(float64) < res["p50_ms"].(float64) {
		t.Fatalf("p99 below p50: %s", b.String())
	}
	// Each pod is created once and bound once in the measured phase; the split by
	// request adds up to the writes per pod.
	by, _ := res["writes_per_pod_by_request"].(map[string]any)
	if by["POST pods"] != 1.0 || by["POST pods/binding"] != 1.0 {
		t.Fatalf("writes per pod by request %v: want POST pods and POST pods/binding at 1 each", by)
	}
	sum := 0.0
	for _, v := range by {
		sum += v.(float64)
	}
	if w := res["writes_per_pod"].(float64); sum < w-1e-9 || sum > w+1e-9 {
		t.Fatalf("writes per pod by request add up to %v, writes_per_pod is %v", sum, w)
	}
}

func TestBenchSchedulerCountsFailures(t *testing.T) {
	var b strings.Builder
	// 1 node holds 40 pods of 100m cpu: 10 of 50 cannot be placed.
	err := runSchedBench(&b, schedBenchOptions{nodes: 1, pods: 50, clients: 4, output: "json",
		leaseInterval: 10 * time.Second, hollowQPS: 100, timeout: 2 * time.Minute, logLevel: "error"})
	if err != nil {
		t.Fatal(err)
	}
	var res struct{ Scheduled, Failed int }
	if err := json.Unmarshal([]byte(b.String()), &res); err != nil {
		t.Fatal(err)
	}
	if res.Scheduled != 40 || res.Failed != 10 {
		t.Fatalf("scheduled %d failed %d, want 40 and 10", res.Scheduled, res.Failed)
	}
}
