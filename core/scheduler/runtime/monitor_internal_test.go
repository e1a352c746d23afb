package runtime

import (
	"testing"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

func TestWouldPick(t *testing.T) {
	list := func(scores ...int64) framework.NodeScoreList {
		out := make(framework.NodeScoreList, len(scores))
		for i, s := range scores {
			out[i] = framework.NodeScore{Name: string(rune('a' + i)), Score: s}
		}
		return out
	}
	for _, c := range []struct {
		name   string
		totals []int64
		scores framework.NodeScoreList
		weight int64
		best   int
		want   string
	}{
		{"agrees", []int64{10, 5, 0}, list(100, 0, 0), 1, 0, ""},
		{"moves the pod", []int64{10, 5, 0}, list(0, 0, 100), 1, 0, "c"},
		{"weight decides", []int64{300, 0}, list(0, 100), 2, 0, ""},
		{"weight decides the other way", []int64{300, 0}, list(0, 100), 4, 0, "b"},
		{"a tie with the pick is agreement", []int64{0, 50}, list(50, 0), 1, 1, ""},
	} {
		if got := wouldPick(c.totals, c.scores, c.weight, c.best); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
