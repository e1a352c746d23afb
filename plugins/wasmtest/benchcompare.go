package wasmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Baseline is a saved bench run (`plugin bench --save`), compared with later runs.
type Baseline struct {
	// Saved is when, and Load the machine's load average then (a figure is only
	// comparable with one taken under a similar load).
	Saved time.Time  `json:"saved"`
	Load  string     `json:"load,omitempty"`
	Rows  []BenchRow `json:"rows"`
}

// SaveBaseline writes rows to path, as YAML when the name ends in .yaml or .yml and as
// JSON otherwise.
func SaveBaseline(path string, b Baseline) error {
	out, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	if isYAML(path) {
		if out, err = yaml.JSONToYAML(out); err != nil {
			return err
		}
	}
	return os.WriteFile(path, append(out, '\n'), 0o644)
}

// LoadBaseline reads a file written by SaveBaseline (JSON or YAML), refusing unknown fields.
func LoadBaseline(path string) (*Baseline, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var base Baseline
	if err := yaml.UnmarshalStrict(b, &base); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(base.Rows) == 0 {
		return nil, fmt.Errorf("%s: rows: empty (not a baseline saved by plugin bench --save?)", path)
	}
	return &base, nil
}

func isYAML(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	return ext == ".yaml" || ext == ".yml"
}

// Thresholds decide what counts as a regression, as gator bench's flags do.
type Thresholds struct {
	// Percent is how much slower (p50 per call) or more allocating a row may be, in
	// percent (0: any increase beyond Min).
	Percent float64
	// Min is the least absolute slowdown of the p50 that counts: a 50% rise from 2 µs
	// to 3 µs is noise on most machines.
	Min time.Duration
}

// Comparison is one row of a run against its baseline.
type Comparison struct {
	Plugin      string        `json:"plugin"`
	Point       string        `json:"point"`
	Nodes       int           `json:"nodes"`
	BaseP50     time.Duration `json:"baseP50Nanos"`
	P50         time.Duration `json:"p50Nanos"`
	P50Change   float64       `json:"p50ChangePercent"`
	BaseAllocs  float64       `json:"baseAllocsPerCall"`
	Allocs      float64       `json:"allocsPerCall"`
	Regressions []string      `json:"regressions,omitempty"`
}

// CompareBench compares each row of cur with the baseline row of the same point, batch
// size and concurrency (and plugin name, unless the baseline holds one plugin only: a
// rebuilt module may carry another file name). Rows without a counterpart are left out.
func CompareBench(base []BenchRow, cur []BenchRow, t Thresholds) []Comparison {
	plugins := map[string]bool{}
	for _, b := range base {
		plugins[b.Plugin] = true
	}
	find := func(r BenchRow) *BenchRow {
		for i, b := range base {
			if b.Point == r.Point && b.Nodes == r.Nodes && max(b.Concurrency, 1) == max(r.Concurrency, 1) && (b.Plugin == r.Plugin || len(plugins) == 1) {
				return &base[i]
			}
		}
		return nil
	}
	var out []Comparison
	for _, r := range cur {
		b := find(r)
		if b == nil {
			continue
		}
		c := Comparison{Plugin: r.Plugin, Point: r.Point, Nodes: r.Nodes, BaseP50: b.P50, P50: r.P50, BaseAllocs: b.AllocsPerCall, Allocs: r.AllocsPerCall}
		if b.P50 > 0 {
			c.P50Change = 100 * float64(r.P50-b.P50) / float64(b.P50)
		}
		limit := float64(b.P50) * (1 + max(t.Percent, 0)/100)
		if float64(r.P50) > limit && r.P50-b.P50 > t.Min {
			c.Regressions = append(c.Regressions, fmt.Sprintf("p50 per call %s -> %s (+%.0f%%, over the %.0f%% threshold)", b.P50.Round(100), r.P50.Round(100), c.P50Change, max(t.Percent, 0)))
		}
		// Allocations: the same percentage, and at least one more per call.
		if r.AllocsPerCall > b.AllocsPerCall*(1+max(t.Percent, 0)/100) && r.AllocsPerCall-b.AllocsPerCall >= 1 {
			c.Regressions = append(c.Regressions, fmt.Sprintf("allocations per call %.1f -> %.1f", b.AllocsPerCall, r.AllocsPerCall))
		}
		out = append(out, c)
	}
	return out
}

// RegressionError is a bench run slower than its baseline (exit 1 in `plugin bench`).
type RegressionError struct {
	Rows []Comparison
}

func (e *RegressionError) Error() string {
	var parts []string
	for _, c := range e.Rows {
		if len(c.Regressions) > 0 {
			parts = append(parts, fmt.Sprintf("%s %s%s: %s", c.Plugin, c.Point, nodesSuffix(c.Nodes), strings.Join(c.Regressions, "; ")))
		}
	}
	return fmt.Sprintf("%d regression(s) against the baseline: %s", len(parts), strings.Join(parts, "; "))
}

// Regressed returns the comparisons' RegressionError, or nil when none regressed.
func Regressed(cs []Comparison) error {
	for _, c := range cs {
		if len(c.Regressions) > 0 {
			return &RegressionError{Rows: cs}
		}
	}
	return nil
}

func nodesSuffix(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" over %d nodes", n)
}

// WriteComparison prints the comparison as a table.
func WriteComparison(w io.Writer, cs []Comparison) {
	fmt.Fprintf(w, "%-32s %-9s %6s %11s %11s %8s %10s %10s  %s\n", "plugin", "point", "nodes", "base p50", "p50", "change", "base alloc", "allocs", "verdict")
	for _, c := range cs {
		verdict := "ok"
		if len(c.Regressions) > 0 {
			verdict = "REGRESSION: " + strings.Join(c.Regressions, "; ")
		}
		nodes := "-"
		if c.Nodes > 0 {
			nodes = fmt.Sprint(c.Nodes)
		}
		fmt.Fprintf(w, "%-32s %-9s %6s %11s %11s %+7.1f%% %10.1f %10.1f  %s\n", c.Plugin, c.Point, nodes, c.BaseP50.Round(100), c.P50.Round(100), c.P50Change, c.BaseAllocs, c.Allocs, verdict)
	}
}
