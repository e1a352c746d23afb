package nodeipam

import (
	"errors"
	"testing"
)

func TestNewAllocatorRefusesBadRanges(t *testing.T) {
	for _, tc := range []struct {
		cidr string
		mask int
	}{
		{"10.42.0.0", 24}, {"fd00::/64", 80}, {"10.42.0.1/16", 24}, {"10.42.0.0/16", 16},
		{"10.42.0.0/16", 31}, {"10.0.0.0/8", 30},
	} {
		if _, err := NewAllocator(tc.cidr, tc.mask); err == nil {
			t.Errorf("NewAllocator(%q, %d): want an error", tc.cidr, tc.mask)
		}
	}
}

func TestAllocator(t *testing.T) {
	type step struct {
		op, node, cidr string // op: alloc, occupy, release
		want           string // alloc: the subnet; occupy: "" or the error kind
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"in order from the first", []step{
			{op: "alloc", node: "a", want: "10.64.0.0/24"},
			{op: "alloc", node: "b", want: "10.64.1.0/24"},
			{op: "alloc", node: "a", want: "10.64.0.0/24"}, // idempotent
		}},
		{"occupied subnets are skipped", []step{
			{op: "occupy", node: "x", cidr: "10.64.0.0/24"},
			{op: "occupy", node: "y", cidr: "10.64.2.0/24"},
			{op: "alloc", node: "a", want: "10.64.1.0/24"},
			{op: "alloc", node: "b", want: "10.64.3.0/24"},
		}},
		{"occupy conflicts and ranges", []step{
			{op: "occupy", node: "x", cidr: "10.64.0.0/24"},
			{op: "occupy", node: "x", cidr: "10.64.0.0/24"},
			{op: "occupy", node: "y", cidr: "10.64.0.0/24", want: "conflict"},
			{op: "occupy", node: "z", cidr: "10.65.0.0/24", want: "range"},
			{op: "occupy", node: "z", cidr: "10.64.0.0/25", want: "range"},
			{op: "occupy", node: "z", cidr: "10.64.0.1/24", want: "range"},
		}},
		{"a released subnet is not the next given", []step{
			{op: "alloc", node: "a", want: "10.64.0.0/24"},
			{op: "alloc", node: "b", want: "10.64.1.0/24"},
			{op: "release", node: "a"},
			{op: "alloc", node: "c", want: "10.64.2.0/24"},
		}},
		{"exhaustion, then a release makes room", []step{
			{op: "alloc", node: "a", want: "10.64.0.0/26"},
			{op: "alloc", node: "b", want: "10.64.0.64/26"},
			{op: "alloc", node: "c", want: "10.64.0.128/26"},
			{op: "alloc", node: "d", want: "10.64.0.192/26"},
			{op: "alloc", node: "e", want: "exhausted"},
			{op: "release", node: "b"},
			{op: "alloc", node: "e", want: "10.64.0.64/26"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cidr, mask := "10.64.0.0/16", 24
			if tc.name == "exhaustion, then a release makes room" {
				cidr, mask = "10.64.0.0/24", 26
			}
			a, err := NewAllocator(cidr, mask)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tc.steps {
				switch s.op {
				case "alloc":
					p, err := a.Allocate(s.node)
					var ex *ExhaustedError
					got := p.String()
					if errors.As(err, &ex) {
						got = "exhausted"
					} else if err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
					if got != s.want {
						t.Fatalf("step %d: Allocate(%s) = %s, want %s", i, s.node, got, s.want)
					}
				case "occupy":
					err := a.Occupy(s.node, s.cidr)
					var ce *ConflictError
					var re *OutOfRangeError
					got := ""
					switch {
					case errors.As(err, &ce):
						got = "conflict"
					case errors.As(err, &re):
						got = "range"
					case err != nil:
						t.Fatalf("step %d: %v", i, err)
					}
					if got != s.want {
						t.Fatalf("step %d: Occupy(%s, %s) = %q (%v), want %q", i, s.node, s.cidr, got, err, s.want)
					}
				case "release":
					if !a.Release(s.node) {
						t.Fatalf("step %d: Release(%s) released nothing", i, s.node)
					}
				}
			}
		})
	}
}
