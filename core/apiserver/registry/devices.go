package registry

import (
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The resources upstream's kube-scheduler and kubelet watch besides pods and nodes (issue 28,
// docs/apiserver.md "Upstream components"): storage.k8s.io's CSI objects and
// resource.k8s.io's dynamic resource allocation (DRA) kinds, in the versions kube-scheduler
// v1.37 asks for. wasmkube stores and serves them with upstream's validation, defaults,
// columns and status subresources; its own scheduler reads ResourceClaims only to refuse a
// pod whose claims it cannot allocate (core/scheduler/plugins/dynamicresources).

var (
	csiDrivers = &Resource{GVR: storagev1.SchemeGroupVersion.WithResource("csidrivers"), Kind: "CSIDriver", Singular: "csidriver",
		NewFunc: NewOf[storagev1.CSIDriver](), NewList: NewOf[storagev1.CSIDriverList]()}
	csiNodes = &Resource{GVR: storagev1.SchemeGroupVersion.WithResource("csinodes"), Kind: "CSINode", Singular: "csinode",
		NewFunc: NewOf[storagev1.CSINode](), NewList: NewOf[storagev1.CSINodeList]()}
	csiStorageCapacities = &Resource{GVR: storagev1.SchemeGroupVersion.WithResource("csistoragecapacities"), Kind: "CSIStorageCapacity", Singular: "csistoragecapacity", Namespaced: true,
		NewFunc: NewOf[storagev1.CSIStorageCapacity](), NewList: NewOf[storagev1.CSIStorageCapacityList]()}
	volumeAttachments = &Resource{GVR: storagev1.SchemeGroupVersion.WithResource("volumeattachments"), Kind: "VolumeAttachment", Singular: "volumeattachment",
		Subresources: []string{"status"},
		NewFunc:      NewOf[storagev1.VolumeAttachment](), NewList: NewOf[storagev1.VolumeAttachmentList]()}

	deviceClasses = &Resource{GVR: resourcev1.SchemeGroupVersion.WithResource("deviceclasses"), Kind: "DeviceClass", Singular: "deviceclass",
		Generation: true,
		NewFunc:    NewOf[resourcev1.DeviceClass](), NewList: NewOf[resourcev1.DeviceClassList]()}
	resourceClaims = &Resource{GVR: resourcev1.SchemeGroupVersion.WithResource("resourceclaims"), Kind: "ResourceClaim", Singular: "resourceclaim", Namespaced: true,
		Subresources: []string{"status"}, Generation: true,
		NewFunc: NewOf[resourcev1.ResourceClaim](), NewList: NewOf[resourcev1.ResourceClaimList]()}
	resourceClaimTemplates = &Resource{GVR: resourcev1.SchemeGroupVersion.WithResource("resourceclaimtemplates"), Kind: "ResourceClaimTemplate", Singular: "resourceclaimtemplate", Namespaced: true,
		Generation: true,
		NewFunc:    NewOf[resourcev1.ResourceClaimTemplate](), NewList: NewOf[resourcev1.ResourceClaimTemplateList]()}
	// ResourceSlices are listed by node (the kubelet's plugin manager) and by driver, with
	// upstream's field labels.
	resourceSlices = &Resource{GVR: resourcev1.SchemeGroupVersion.WithResource("resourceslices"), Kind: "ResourceSlice", Singular: "resourceslice",
		Generation: true,
		NewFunc:    NewOf[resourcev1.ResourceSlice](), NewList: NewOf[resourcev1.ResourceSliceList](), Fields: resourceSliceFields}
	deviceTaintRules = &Resource{GVR: resourcev1.SchemeGroupVersion.WithResource("devicetaintrules"), Kind: "DeviceTaintRule", Singular: "devicetaintrule",
		Subresources: []string{"status"}, Generation: true,
		NewFunc: NewOf[resourcev1.DeviceTaintRule](), NewList: NewOf[resourcev1.DeviceTaintRuleList]()}
)

func resourceSliceFields(o runtime.Object) map[string]string {
	s := o.(*resourcev1.ResourceSlice)
	node := ""
	if s.Spec.NodeName != nil {
		node = *s.Spec.NodeName
	}
	return map[string]string{resourcev1.ResourceSliceSelectorNodeName: node, resourcev1.ResourceSliceSelectorDriver: s.Spec.Driver}
}
