package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseProcStatCPU(t *testing.T) {
	// A command name with a space and a parenthesis, 250 ticks of user and 30 of system time.
	line := "4242 (kube sched) x) S 1 4242 4242 0 -1 4194560 9001 0 0 0 250 30 0 0 20 0 12 0 100 0 0\n"
	d, err := parseProcStatCPU(line)
	if err != nil || d != 2800*time.Millisecond {
		t.Fatalf("got %v, %v; want 2.8s", d, err)
	}
	if _, err := parseProcStatCPU("4242 (short) S 1 2"); err == nil {
		t.Fatal("a truncated line parsed")
	}
	// This process has used some CPU by now.
	if d, err := procCPU(os.Getpid()); err != nil || d <= 0 {
		t.Fatalf("procCPU(self) = %v, %v", d, err)
	}
}

func TestParseBatchAttempts(t *testing.T) {
	text := `# HELP scheduler_batch_attempts_total Cycles by what batching did.
# TYPE scheduler_batch_attempts_total counter
scheduler_batch_attempts_total{profile="default-scheduler",result="reused"} 9876
scheduler_batch_attempts_total{profile="other",result="reused"} 4
scheduler_batch_attempts_total{profile="default-scheduler",result="flush_changed"} 12
scheduler_pending_pods{queue="active"} 3
`
	got := parseBatchAttempts(text)
	if len(got) != 2 || got["reused"] != 9880 || got["flush_changed"] != 12 {
		t.Fatalf("got %v", got)
	}
	if parseBatchAttempts("scheduler_pending_pods 1\n") != nil {
		t.Fatal("no counter: want nil")
	}
}

func TestCheckSchedulerFlags(t *testing.T) {
	for _, tc := range []struct {
		o    schedBenchOptions
		want string
	}{
		{schedBenchOptions{scheduler: schedInProcess}, ""},
		{schedBenchOptions{scheduler: schedWasmkube, configFile: "x.yaml", batching: "on"}, ""},
		{schedBenchOptions{scheduler: "kube"}, `--scheduler "kube": must be`},
		{schedBenchOptions{scheduler: schedUpstream, configFile: "x.yaml", upstreamBinary: "/bin/true"}, "upstream's scheduler runs its default profile"},
		{schedBenchOptions{scheduler: schedUpstream, upstreamBinary: "/nonexistent/kube-scheduler"}, "scripts/upstream-scheduler.sh"},
		{schedBenchOptions{scheduler: schedUpstream, upstreamBinary: "/bin/true"}, ""},
	} {
		err := checkSchedulerFlags(tc.o)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}

// TestBenchSchedulerBacklog: with --backlog the pods exist before the scheduler starts
// (initial pods bound by the bench itself), and the drain's figures are reported.
func TestBenchSchedulerBacklog(t *testing.T) {
	var b strings.Builder
	err := runSchedBench(&b, schedBenchOptions{nodes: 5, pods: 60, initialPods: 10, shape: shapeBasic, clients: 4, output: "json", backlog: true,
		leaseInterval: 10 * time.Second, hollowQPS: 100, timeout: 2 * time.Minute, logLevel: "error"})
	if err != nil {
		t.Fatal(err)
	}
	var res SchedBenchResult
	if err := json.Unmarshal([]byte(b.String()), &res); err != nil {
		t.Fatal(err)
	}
	if res.Scheduled != 60 || res.Failed != 0 || !res.Backlog || res.Scheduler != schedInProcess || res.DrainPodsPerSecond <= 0 || res.FirstBoundSeconds <= 0 {
		t.Fatalf("result %s", b.String())
	}
}

// TestBenchSchedulerUpstream runs the side by side's upstream half: upstream kube-scheduler
// (bin/kube-scheduler, skipped when not built) as a child process draining a backlog, its
// CPU read from /proc.
func TestBenchSchedulerUpstream(t *testing.T) {
	bin, err := filepath.Abs("../../bin/kube-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skip("bin/kube-scheduler is not built: scripts/upstream-scheduler.sh builds upstream kube-scheduler v1.37.2 into bin/")
	}
	var b strings.Builder
	err = runSchedBench(&b, schedBenchOptions{nodes: 5, pods: 60, clients: 4, output: "json", backlog: true, scheduler: schedUpstream, upstreamBinary: bin,
		leaseInterval: 10 * time.Second, hollowQPS: 100, timeout: 2 * time.Minute, logLevel: "error"})
	if err != nil {
		t.Fatal(err)
	}
	var res SchedBenchResult
	if err := json.Unmarshal([]byte(b.String()), &res); err != nil {
		t.Fatal(err)
	}
	if res.Scheduled != 60 || res.Failed != 0 || res.Scheduler != schedUpstream || res.SchedulerCPUPerPodMs <= 0 || res.CPUPerPodMs[compScheduler] != res.SchedulerCPUPerPodMs {
		t.Fatalf("result %s", b.String())
	}
}
