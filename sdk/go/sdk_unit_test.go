package sdk

import (
	"reflect"
	"testing"
	"unsafe"
)

func TestParseTaints(t *testing.T) {
	tests := []struct {
		in   string
		want []Taint
	}{
		{"", nil},
		{"gpu=true:NoSchedule\n", []Taint{{"gpu", "true", "NoSchedule"}}},
		{"spot:PreferNoSchedule\nexample.com/x=a:b:NoExecute\n", []Taint{{"spot", "", "PreferNoSchedule"}, {"example.com/x", "a:b", "NoExecute"}}},
	}
	for _, tt := range tests {
		if got := parseTaints(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseTaints(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestDecodeRecords(t *testing.T) {
	p := decodePodRequests([5]int64{1, 2, 3, 4, 5})
	if p != (PodRequests{Resources: Resources{1, 2, 3, 1}, NonZeroMilliCPU: 4, NonZeroMemory: 5}) {
		t.Errorf("pod requests %+v", p)
	}
	n := decodeNodeResources([10]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	want := NodeResources{Allocatable: Resources{1, 2, 3, 4}, Requested: Resources{5, 6, 7, 8}, NonZeroRequested: Resources{MilliCPU: 9, Memory: 10}}
	if n != want {
		t.Errorf("node resources %+v, want %+v", n, want)
	}
}

// readVar follows the buffer rule: a value longer than the buffer is asked for again
// with a buffer big enough, and negative codes pass through.
func TestReadVar(t *testing.T) {
	long := make([]byte, 10000)
	for i := range long {
		long[i] = byte('a' + i%26)
	}
	calls := 0
	fill := func(value []byte) fillFunc {
		return func(buf unsafe.Pointer, capacity int32) int32 {
			calls++
			if int(capacity) >= len(value) {
				copy(unsafe.Slice((*byte)(buf), capacity), value)
			}
			return int32(len(value))
		}
	}
	b, n := readVar(fill([]byte("short")))
	if string(b) != "short" || n != 5 || calls != 1 {
		t.Errorf("short value: %q %d after %d calls", b, n, calls)
	}
	calls = 0
	b, n = readVar(fill(long))
	if string(b) != string(long) || n != 10000 || calls != 2 {
		t.Errorf("long value: %d bytes, code %d after %d calls; want 10000 bytes after 2 calls", len(b), n, calls)
	}
	if _, code := readVar(func(unsafe.Pointer, int32) int32 { return -1 }); code != -1 {
		t.Errorf("not found: code %d", code)
	}
	if _, ok := readString(func(unsafe.Pointer, int32) int32 { return -2 }); ok {
		t.Error("unavailable value reported as present")
	}
}

func TestStatusHelpers(t *testing.T) {
	if !OK().IsSuccess() || Reject("x").Code != CodeUnschedulable || Errorf("bad %d", 1).Reason != "bad 1" || Skip().Code != CodeSkip {
		t.Error("status helpers")
	}
	if grow(4096, 10000) != 16384 || grow(4096, 4096) != 4096 {
		t.Error("grow")
	}
}
