package sdk

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
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

// The host writes the records in place: the structs must have exactly their layout.
func TestRecordLayouts(t *testing.T) {
	var n NodeResources
	if unsafe.Sizeof(n) != abi.NodeResourcesWords*8 || unsafe.Offsetof(n.Requested) != 32 || unsafe.Offsetof(n.NonZeroRequested) != 64 {
		t.Errorf("NodeResources layout: size %d, Requested at %d, NonZeroRequested at %d", unsafe.Sizeof(n), unsafe.Offsetof(n.Requested), unsafe.Offsetof(n.NonZeroRequested))
	}
	var p PodRequests
	if unsafe.Sizeof(p) != abi.PodRequestsWords*8 || unsafe.Offsetof(p.NonZeroMilliCPU) != 24 {
		t.Errorf("PodRequests layout: size %d", unsafe.Sizeof(p))
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
