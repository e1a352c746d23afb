//go:build tools

// Package hack pins the project's dependencies in go.mod before every one of them is
// imported by code, so that concurrent work never races on `go get`.
package hack

import (
	_ "github.com/containerd/containerd/v2/client"
	_ "github.com/containernetworking/cni/libcni"
	_ "github.com/evanphx/json-patch/v5"
	_ "github.com/google/go-containerregistry/pkg/registry"
	_ "github.com/google/go-containerregistry/pkg/v1/layout"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/viper"
	_ "github.com/tetratelabs/wazero"
	_ "go.etcd.io/etcd/client/v3"
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/util/strategicpatch"
	_ "k8s.io/client-go/informers"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/tools/leaderelection"
	_ "k8s.io/client-go/tools/record"
	_ "k8s.io/client-go/util/workqueue"
	_ "sigs.k8s.io/yaml"
)
