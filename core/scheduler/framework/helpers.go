package framework

import (
	"bytes"
	"encoding/json"
	"fmt"
	v1 "k8s.io/api/core/v1"
)

// DecodeArgs decodes a plugin's args strictly: an unknown key is an error naming it.
// Empty args leave into unchanged (the plugin's defaults).
func DecodeArgs(plugin string, args json.RawMessage, into any) error {
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("args of plugin %s: %w", plugin, err)
	}
	return nil
}

// DefaultNormalizeScore scales scores to [0, maxPriority] by the highest score; with
// reverse, a higher raw score becomes a lower final one (upstream's helper).
func DefaultNormalizeScore(maxPriority int64, reverse bool, scores NodeScoreList) *Status {
	var top int64
	for i := range scores {
		top = max(top, scores[i].Score)
	}
	if top == 0 {
		if reverse {
			for i := range scores {
				scores[i].Score = maxPriority
			}
		}
		return nil
	}
	for i := range scores {
		s := scores[i].Score
		s = maxPriority * s / top
		if reverse {
			s = maxPriority - s
		}
		scores[i].Score = s
	}
	return nil
}

// PodPriority is spec.priority, 0 when unset.
func PodPriority(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}
