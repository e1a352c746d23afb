package apiserver

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// servedResource names the served resource a WasmPolicy capability (a plural resource
// name, as admission policies' get_object and list_objects take it) reads: the stored
// version, the core group first when two groups serve the name.
func (s *Server) servedResource(res string) (schema.GroupVersionResource, bool) {
	var found schema.GroupVersionResource
	ok := false
	for gvr, st := range s.stores {
		if gvr.Resource != res || st.Resource.StoredAs != nil {
			continue
		}
		if !ok || gvr.Group == "" || (found.Group != "" && gvr.Group < found.Group) {
			found, ok = gvr, true
		}
	}
	return found, ok
}
