package apiserver

import (
	"context"
	"errors"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/defaults"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/storage"
	"github.com/wasmkube/wasmkube/internal/volumes"
)

// seedStorageClasses creates the default StorageClass local-path (the kubelet's
// local-path provisioner, WaitForFirstConsumer, reclaim Delete) once, as k3s ships it. An
// admin may change or delete it afterwards: it is not recreated over an existing one,
// and a deleted one comes back at the next start (as k3s's manifest does).
func (s *Server) seedStorageClasses(ctx context.Context) error {
	st := s.stores[storagev1.SchemeGroupVersion.WithResource("storageclasses")]
	if st == nil {
		return nil
	}
	sc := volumes.DefaultStorageClass()
	st.PrepareForCreate(sc, metav1.Now())
	defaults.Default(sc)
	if _, err := st.Storage.Create(ctx, st.Key("", sc.Name), st.TrackServerWrite(registry.ServerManager, nil, sc)); err != nil && !errors.Is(err, storage.ErrAlreadyExists) {
		return fmt.Errorf("apiserver: create storageclass %s: %w", sc.Name, err)
	}
	return nil
}
