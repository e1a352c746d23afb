package upstreamattrs

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
)

// assign copies *src into *dst for two pointers to the same struct type.
func assign(dst, src runtime.Object) error {
	dv, sv := reflect.ValueOf(dst), reflect.ValueOf(src)
	if dv.Kind() != reflect.Pointer || sv.Type() != dv.Type() {
		return fmt.Errorf("patched object is %T, want %T", src, dst)
	}
	dv.Elem().Set(sv.Elem())
	return nil
}
