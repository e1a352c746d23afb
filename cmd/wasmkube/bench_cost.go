package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/pprof/profile"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// What bounds `bench scheduler`: the API requests the run cost, by verb and resource,
// and the CPU each component spent per scheduled pod. All components run in this one
// process, so CPU is split by goroutine labels (runtime/pprof): each component is
// started under a "component" label that every goroutine it starts inherits, and the
// measured phase is CPU-profiled. Samples in etcd's server code (go.etcd.io/etcd/server,
// raft, bbolt) count as etcd whatever goroutine ran them; the GC's background workers
// carry no label and count as "gc". docs/benchmarks.md explains how to read it.

// Component labels.
const (
	compAPIServer = "apiserver"
	compEtcd      = "etcd"
	compScheduler = "scheduler"
	compHollow    = "hollow-nodes"
	compClients   = "clients"
	compGC        = "gc"
	compOther     = "other"
)

var componentOrder = []string{compAPIServer, compEtcd, compScheduler, compHollow, compClients, compGC, compOther}

// labelComponent labels the calling goroutine, and every goroutine it starts from now
// on, as component name.
func labelComponent(name string) {
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("component", name)))
}

// RequestRate is one verb and resource's API requests during the measured phase.
type RequestRate struct {
	Verb        string  `json:"verb"`
	Resource    string  `json:"resource"`
	Subresource string  `json:"subresource,omitempty"`
	Count       int     `json:"count"`
	PerSecond   float64 `json:"per_second"`
}

func (r RequestRate) what() string {
	if r.Subresource != "" {
		return r.Verb + " " + r.Resource + "/" + r.Subresource
	}
	return r.Verb + " " + r.Resource
}

// requestCounts reads apiserver_request_total by verb, resource and subresource.
func requestCounts(g prometheus.Gatherer) (map[[3]string]float64, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, fmt.Errorf("bench: read the API server's metrics: %w", err)
	}
	out := map[[3]string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "apiserver_request_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var k [3]string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "verb":
					k[0] = l.GetValue()
				case "resource":
					k[1] = l.GetValue()
				case "subresource":
					k[2] = l.GetValue()
				}
			}
			out[k] += counterValue(m)
		}
	}
	return out, nil
}

func counterValue(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return 0
}

// requestRates is after minus before, busiest first.
func requestRates(before, after map[[3]string]float64, seconds float64) []RequestRate {
	var out []RequestRate
	for k, v := range after {
		n := int(v - before[k] + 0.5)
		if n <= 0 || k[1] == "" {
			continue
		}
		r := RequestRate{Verb: k[0], Resource: k[1], Subresource: k[2], Count: n}
		if seconds > 0 {
			r.PerSecond = float64(n) / seconds
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].what() < out[j].what()
	})
	return out
}

// writeVerb reports whether verb changes state (counted in writes per pod).
func writeVerb(verb string) bool {
	switch verb {
	case "GET", "LIST", "WATCH", "WATCHLIST", "CONNECT":
		return false
	}
	return true
}

// processCPU is the process's user+system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuRecorder profiles the measured phase into memory (and into --cpuprofile's file).
type cpuRecorder struct {
	buf   bytes.Buffer
	file  io.WriteCloser
	start time.Duration
}

func startCPURecorder(file io.WriteCloser) (*cpuRecorder, error) {
	r := &cpuRecorder{file: file}
	var w io.Writer = &r.buf
	if file != nil {
		w = io.MultiWriter(&r.buf, file)
	}
	if err := pprof.StartCPUProfile(w); err != nil {
		return nil, fmt.Errorf("bench: CPU profile: %w", err)
	}
	r.start = processCPU()
	return r, nil
}

// stop ends the profile and returns CPU seconds by component and the process's CPU
// seconds over the phase.
func (r *cpuRecorder) stop() (map[string]float64, float64, error) {
	pprof.StopCPUProfile()
	total := (processCPU() - r.start).Seconds()
	if r.file != nil {
		r.file.Close()
	}
	p, err := profile.Parse(&r.buf)
	if err != nil {
		return nil, total, fmt.Errorf("bench: read the CPU profile: %w", err)
	}
	vi := len(p.SampleType) - 1 // cpu nanoseconds
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			vi = i
		}
	}
	by := map[string]float64{}
	for _, s := range p.Sample {
		by[classify(s)] += float64(s.Value[vi]) / 1e9
	}
	return by, total, nil
}

// classify names the component a CPU sample belongs to.
func classify(s *profile.Sample) string {
	for _, loc := range s.Location {
		for _, ln := range loc.Line {
			if ln.Function == nil {
				continue
			}
			name := ln.Function.Name
			switch {
			case strings.HasPrefix(name, "go.etcd.io/etcd/server/"), strings.HasPrefix(name, "go.etcd.io/raft/"), strings.HasPrefix(name, "go.etcd.io/bbolt"):
				return compEtcd
			case name == "runtime.gcBgMarkWorker":
				return compGC
			}
		}
	}
	if c := s.Label["component"]; len(c) > 0 {
		return c[0]
	}
	return compOther
}

// formatCost is the text report's lines on requests and CPU.
func formatCost(res *SchedBenchResult) string {
	var b strings.Builder
	if len(res.Requests) > 0 {
		b.WriteString("API requests/s during the run:")
		for i, r := range res.Requests {
			if i == 12 {
				fmt.Fprintf(&b, " (+%d more kinds)", len(res.Requests)-i)
				break
			}
			fmt.Fprintf(&b, " %s %.0f;", r.what(), r.PerSecond)
		}
		fmt.Fprintf(&b, "\nAPI writes per scheduled pod: %.2f (all requests %.2f)", res.WritesPerPod, res.RequestsPerPod)
		if len(res.WritesPerPodBy) > 0 {
			b.WriteString(":")
			for _, r := range res.Requests { // busiest first
				if v, ok := res.WritesPerPodBy[r.what()]; ok && writeVerb(r.Verb) {
					fmt.Fprintf(&b, " %s %.2f;", r.what(), v)
				}
			}
		}
		b.WriteString("\n")
	}
	if len(res.CPUPerPodMs) > 0 {
		fmt.Fprintf(&b, "CPU per scheduled pod: %.2f ms of process CPU (%.1f s in all):", res.CPUPerPodTotalMs, res.CPUSeconds)
		for _, c := range componentOrder {
			if v, ok := res.CPUPerPodMs[c]; ok {
				fmt.Fprintf(&b, " %s %.2f ms;", c, v)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
