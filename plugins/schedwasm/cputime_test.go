package schedwasm

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// threadCPU is the CPU time of the calling OS thread (RUSAGE_THREAD). On a shared machine
// a benchmark's wall clock counts the time others held the CPU; its thread's CPU time does
// not, so BenchmarkFilterScore reports both.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuPerNode runs body b.N times on one locked OS thread and reports its CPU time per
// node as "cpu-ns/node" beside the wall clock's "ns/node".
func cpuPerNode(b *testing.B, nodes int, body func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPU()
	for b.Loop() {
		body()
	}
	cpu := threadCPU() - start
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nodes), "ns/node")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*nodes), "cpu-ns/node")
}
