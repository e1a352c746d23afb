package printers

import (
	"strings"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Columns of the CSI kinds (storage.k8s.io/v1) and the dynamic resource allocation kinds
// (resource.k8s.io/v1), as upstream's printers (pkg/printers/internalversion, v1.37).

var (
	csiDriverColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "AttachRequired", Type: "boolean", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["attachRequired"]},
		{Name: "PodInfoOnMount", Type: "boolean", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["podInfoOnMount"]},
		{Name: "StorageCapacity", Type: "boolean", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["storageCapacity"]},
		{Name: "TokenRequests", Type: "string", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["tokenRequests"]},
		{Name: "RequiresRepublish", Type: "boolean", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["requiresRepublish"]},
		{Name: "Modes", Type: "string", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["volumeLifecycleModes"]},
		ageColumn,
	}
	csiNodeColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Drivers", Type: "integer", Description: "Drivers indicates the number of CSI drivers registered on the node"},
		ageColumn,
	}
	// Upstream prints no age for capacities.
	csiStorageCapacityColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "StorageClassName", Type: "string", Description: storagev1.CSIStorageCapacity{}.SwaggerDoc()["storageClassName"]},
		{Name: "Capacity", Type: "string", Description: storagev1.CSIStorageCapacity{}.SwaggerDoc()["capacity"]},
	}
	volumeAttachmentColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Attacher", Type: "string", Format: "name", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["attacher"]},
		{Name: "PV", Type: "string", Description: storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"]},
		{Name: "Node", Type: "string", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["nodeName"]},
		{Name: "Attached", Type: "boolean", Description: storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"]},
		ageColumn,
	}
	nameAgeColumns       = []metav1.TableColumnDefinition{nameColumn, ageColumn}
	resourceClaimColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "State", Type: "string", Description: "A summary of the current state (allocated, pending, reserved, etc.)."},
		ageColumn,
	}
	resourceSliceColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Node", Type: "string", Description: resourcev1.ResourceSliceSpec{}.SwaggerDoc()["nodeName"]},
		{Name: "Driver", Type: "string", Description: resourcev1.ResourceSliceSpec{}.SwaggerDoc()["driver"]},
		{Name: "Pool", Type: "string", Description: resourcev1.ResourcePool{}.SwaggerDoc()["name"]},
		ageColumn,
	}
	deviceTaintRuleColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Key", Type: "string", Description: resourcev1.DeviceTaint{}.SwaggerDoc()["key"]},
		{Name: "Value", Type: "string", Description: resourcev1.DeviceTaint{}.SwaggerDoc()["value"]},
		{Name: "Effect", Type: "string", Description: resourcev1.DeviceTaint{}.SwaggerDoc()["effect"]},
		{Name: "TimeAdded", Type: "string", Description: resourcev1.DeviceTaint{}.SwaggerDoc()["timeAdded"]},
		ageColumn,
	}
)

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

func printCSIDriver(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	d, ok := obj.(*storagev1.CSIDriver)
	if !ok {
		return nil, nil, false
	}
	var modes []string
	for _, m := range d.Spec.VolumeLifecycleModes {
		modes = append(modes, string(m))
	}
	mode := strings.Join(modes, ",")
	if mode == "" {
		mode = "<none>"
	}
	tokens := "<unset>"
	if d.Spec.TokenRequests != nil {
		var aud []string
		for _, t := range d.Spec.TokenRequests {
			aud = append(aud, t.Audience)
		}
		tokens = strings.Join(aud, ",")
	}
	return []any{d.Name, boolOr(d.Spec.AttachRequired, true), boolOr(d.Spec.PodInfoOnMount, false), boolOr(d.Spec.StorageCapacity, false),
		tokens, boolOr(d.Spec.RequiresRepublish, false), mode, age(d.CreationTimestamp, now)}, nil, true
}

func printCSINode(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	n, ok := obj.(*storagev1.CSINode)
	if !ok {
		return nil, nil, false
	}
	return []any{n.Name, int64(len(n.Spec.Drivers)), age(n.CreationTimestamp, now)}, nil, true
}

func printCSIStorageCapacity(obj runtime.Object, _ time.Time) ([]any, []metav1.TableRowCondition, bool) {
	c, ok := obj.(*storagev1.CSIStorageCapacity)
	if !ok {
		return nil, nil, false
	}
	capacity := "<unset>"
	if c.Capacity != nil {
		capacity = c.Capacity.String()
	}
	return []any{c.Name, c.StorageClassName, capacity}, nil, true
}

func printVolumeAttachment(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	va, ok := obj.(*storagev1.VolumeAttachment)
	if !ok {
		return nil, nil, false
	}
	pv := ""
	if va.Spec.Source.PersistentVolumeName != nil {
		pv = *va.Spec.Source.PersistentVolumeName
	}
	return []any{va.Name, va.Spec.Attacher, pv, va.Spec.NodeName, va.Status.Attached, age(va.CreationTimestamp, now)}, nil, true
}

// nameAge prints NAME and AGE of a DeviceClass or ResourceClaimTemplate.
func nameAge[T interface {
	runtime.Object
	GetName() string
	GetCreationTimestamp() metav1.Time
}](obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	o, ok := obj.(T)
	if !ok {
		return nil, nil, false
	}
	return []any{o.GetName(), age(o.GetCreationTimestamp(), now)}, nil, true
}

// resourceClaimState is upstream's STATE: deleted, pending, allocated, reserved, joined
// by commas.
func resourceClaimState(c *resourcev1.ResourceClaim) string {
	var states []string
	if c.DeletionTimestamp != nil {
		states = append(states, "deleted")
	}
	if c.Status.Allocation == nil {
		if c.DeletionTimestamp == nil {
			states = append(states, "pending")
		}
	} else {
		states = append(states, "allocated")
		if len(c.Status.ReservedFor) > 0 {
			states = append(states, "reserved")
		}
	}
	return strings.Join(states, ",")
}

func printResourceClaim(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	c, ok := obj.(*resourcev1.ResourceClaim)
	if !ok {
		return nil, nil, false
	}
	return []any{c.Name, resourceClaimState(c), age(c.CreationTimestamp, now)}, nil, true
}

func printResourceSlice(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	s, ok := obj.(*resourcev1.ResourceSlice)
	if !ok {
		return nil, nil, false
	}
	node := ""
	if s.Spec.NodeName != nil {
		node = *s.Spec.NodeName
	}
	return []any{s.Name, node, s.Spec.Driver, s.Spec.Pool.Name, age(s.CreationTimestamp, now)}, nil, true
}

func printDeviceTaintRule(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	r, ok := obj.(*resourcev1.DeviceTaintRule)
	if !ok {
		return nil, nil, false
	}
	added := ""
	if t := r.Spec.Taint.TimeAdded; t != nil {
		added = age(*t, now)
	}
	return []any{r.Name, r.Spec.Taint.Key, r.Spec.Taint.Value, string(r.Spec.Taint.Effect), added, age(r.CreationTimestamp, now)}, nil, true
}

func init() {
	st, rs := storagev1.SchemeGroupVersion, resourcev1.SchemeGroupVersion
	register(st.WithKind("CSIDriver"), csiDriverColumns, printCSIDriver)
	register(st.WithKind("CSINode"), csiNodeColumns, printCSINode)
	register(st.WithKind("CSIStorageCapacity"), csiStorageCapacityColumns, printCSIStorageCapacity)
	register(st.WithKind("VolumeAttachment"), volumeAttachmentColumns, printVolumeAttachment)
	register(rs.WithKind("DeviceClass"), nameAgeColumns, nameAge[*resourcev1.DeviceClass])
	register(rs.WithKind("ResourceClaim"), resourceClaimColumns, printResourceClaim)
	register(rs.WithKind("ResourceClaimTemplate"), nameAgeColumns, nameAge[*resourcev1.ResourceClaimTemplate])
	register(rs.WithKind("ResourceSlice"), resourceSliceColumns, printResourceSlice)
	register(rs.WithKind("DeviceTaintRule"), deviceTaintRuleColumns, printDeviceTaintRule)
}
