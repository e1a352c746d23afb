package apiserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// TestCSIKinds serves storage.k8s.io/v1 CSIDriver, CSINode, CSIStorageCapacity and
// VolumeAttachment as upstream: defaults, a 422 naming the fields, the status subresource
// of a VolumeAttachment, immutable fields, kubectl's columns and explain.
func TestCSIKinds(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st := srv.Client.StorageV1()

	d, err := st.CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "hostpath.csi.k8s.io"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !*d.Spec.AttachRequired || *d.Spec.PodInfoOnMount || *d.Spec.FSGroupPolicy != storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy ||
		len(d.Spec.VolumeLifecycleModes) != 1 || d.Spec.VolumeLifecycleModes[0] != storagev1.VolumeLifecyclePersistent || d.Spec.SELinuxMount == nil {
		t.Fatalf("CSIDriver defaults: %+v", d.Spec)
	}
	d.Spec.AttachRequired = ptr.To(false)
	if _, err := st.CSIDrivers().Update(ctx, d, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.attachedRequired: Invalid value: false: field is immutable") {
		t.Fatalf("CSIDriver attachRequired change: %v", err)
	}
	_, err = st.CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "bad.csi"},
		Spec: storagev1.CSIDriverSpec{TokenRequests: []storagev1.TokenRequest{{Audience: "a", ExpirationSeconds: ptr.To[int64](60)}},
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{"Sometimes"}}}, metav1.CreateOptions{})
	for _, want := range []string{"spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
		`spec.volumeLifecycleModes: Unsupported value: "Sometimes"`} {
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("invalid CSIDriver: want %q in %v", want, err)
		}
	}

	if _, err := st.CSINodes().Create(ctx, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: "hostpath.csi.k8s.io", NodeID: "n1", TopologyKeys: []string{"topology.hostpath.csi/node"}, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](8)}},
	}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = st.CSINodes().Create(ctx, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n2"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: "a.csi"}, {Name: "a.csi", NodeID: "x"},
	}}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.drivers[0].nodeID: Required value") || !strings.Contains(err.Error(), `spec.drivers[1].name: Duplicate value: "a.csi"`) {
		t.Errorf("invalid CSINode: %v", err)
	}

	q := resource.MustParse("10Gi")
	if _, err := st.CSIStorageCapacities("default").Create(ctx, &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: "cap1"},
		StorageClassName: "fast", Capacity: &q, NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{"topology.hostpath.csi/node": "n1"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	va, err := st.VolumeAttachments().Create(ctx, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va1"}, Spec: storagev1.VolumeAttachmentSpec{
		Attacher: "hostpath.csi.k8s.io", NodeName: "n1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv1")},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	va.Status.Attached = true
	va.Spec.NodeName = "ignored-by-status"
	va, err = st.VolumeAttachments().UpdateStatus(ctx, va, metav1.UpdateOptions{})
	if err != nil || !va.Status.Attached || va.Spec.NodeName != "n1" {
		t.Fatalf("VolumeAttachment status: %v %+v", err, va)
	}
	va.Spec.NodeName = "n2"
	if _, err := st.VolumeAttachments().Update(ctx, va, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec: Invalid value") {
		t.Errorf("VolumeAttachment spec change: %v", err)
	}
	_, err = st.VolumeAttachments().Create(ctx, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va2"}, Spec: storagev1.VolumeAttachmentSpec{NodeName: "n1"}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.attacher: Required value") ||
		!strings.Contains(err.Error(), "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName") {
		t.Errorf("invalid VolumeAttachment: %v", err)
	}

	k := newKubectl(t, srv)
	for _, c := range []struct{ resource, header, row string }{
		{"csidrivers", "NAME ATTACHREQUIRED PODINFOONMOUNT STORAGECAPACITY TOKENREQUESTS REQUIRESREPUBLISH MODES AGE", "hostpath.csi.k8s.io true false false <unset> false Persistent"},
		{"csinodes", "NAME DRIVERS AGE", "n1 1"},
		{"csistoragecapacities", "NAME STORAGECLASSNAME CAPACITY", "cap1 fast 10Gi"},
		{"volumeattachments", "NAME ATTACHER PV NODE ATTACHED AGE", "va1 hostpath.csi.k8s.io pv1 n1 true"},
	} {
		out := k.ok("get", c.resource, "-n", "default")
		if h := header(out); h != c.header {
			t.Errorf("kubectl get %s columns: %q", c.resource, h)
		}
		if !strings.Contains(strings.Join(strings.Fields(out), " "), c.row) {
			t.Errorf("kubectl get %s: want %q in\n%s", c.resource, c.row, out)
		}
	}
	if out := k.ok("explain", "csinodes.spec.drivers.allocatable"); !strings.Contains(out, "count") {
		t.Errorf("kubectl explain csinodes.spec.drivers.allocatable:\n%s", out)
	}
}

// TestDRAKinds serves resource.k8s.io/v1 DeviceClass, ResourceClaim, ResourceClaimTemplate,
// ResourceSlice and DeviceTaintRule as upstream: request defaults, the immutable claim spec,
// the claim's status subresource with its invariants, the slice's node-selection union and
// field selectors, kubectl's columns, discovery and explain.
func TestDRAKinds(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rs := srv.Client.ResourceV1()

	if _, err := rs.DeviceClasses().Create(ctx, &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com"},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "gpu.example.com"`}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim, err := rs.ResourceClaims("default").Create(ctx, &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
			{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e := claim.Spec.Devices.Requests[0].Exactly; e.AllocationMode != resourcev1.DeviceAllocationModeExactCount || e.Count != 1 || claim.Generation != 1 {
		t.Fatalf("ResourceClaim defaults: %+v generation %d", e, claim.Generation)
	}
	claim.Spec.Devices.Requests[0].Exactly.Count = 2
	if _, err := rs.ResourceClaims("default").Update(ctx, claim, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "field is immutable") {
		t.Errorf("ResourceClaim spec change: %v", err)
	}
	claim.Spec.Devices.Requests[0].Exactly.Count = 1
	claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", UID: "u1"}}
	if _, err := rs.ResourceClaims("default").UpdateStatus(ctx, claim, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "status.reservedFor: Forbidden: may not be specified when `allocated` is not set") {
		t.Errorf("reservedFor without an allocation: %v", err)
	}
	claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
		{Request: "gpu", Driver: "gpu.example.com", Pool: "n1", Device: "gpu-0"}}}}
	claim, err = rs.ResourceClaims("default").UpdateStatus(ctx, claim, metav1.UpdateOptions{})
	if err != nil || claim.Status.Allocation == nil || len(claim.Status.ReservedFor) != 1 {
		t.Fatalf("ResourceClaim status: %v %+v", err, claim.Status)
	}
	claim.Status.Allocation.Devices.Results[0].Device = "gpu-1"
	if _, err := rs.ResourceClaims("default").UpdateStatus(ctx, claim, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.allocation: Invalid value") {
		t.Errorf("allocation change: %v", err)
	}
	_, err = rs.ResourceClaims("default").Create(ctx, &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "a"}, {Name: "b", Exactly: &resourcev1.ExactDeviceRequest{AllocationMode: resourcev1.DeviceAllocationModeAll, Count: 2}}},
			Config:   []resourcev1.DeviceClaimConfiguration{{Requests: []string{"c"}}},
		}}}, metav1.CreateOptions{})
	for _, want := range []string{"spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required",
		"spec.devices.requests[1].exactly.deviceClassName: Required value",
		"spec.devices.requests[1].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'",
		`spec.devices.config[0].requests[0]: Invalid value: "c": must be the name of a request in the claim`,
		"spec.devices.config[0].opaque: Required value"} {
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("invalid ResourceClaim: want %q in %v", want, err)
		}
	}

	if _, err := rs.ResourceClaimTemplates("default").Create(ctx, &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "gpu-tmpl"},
		Spec: resourcev1.ResourceClaimTemplateSpec{ObjectMeta: metav1.ObjectMeta{Name: "not-allowed"}, Spec: claim.Spec}}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "spec.metadata.name: Forbidden: cannot be set") {
		t.Errorf("template metadata name: %v", err)
	}
	if _, err := rs.ResourceClaimTemplates("default").Create(ctx, &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "gpu-tmpl"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: claim.Spec}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, node := range []string{"n1", "n2"} {
		if _, err := rs.ResourceSlices().Create(ctx, &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpu"}, Spec: resourcev1.ResourceSliceSpec{
			Driver: "gpu.example.com", NodeName: ptr.To(node), Pool: resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "gpu-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"model": {StringValue: ptr.To("a100")}}}},
		}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	slices, err := rs.ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n2"})
	if err != nil || len(slices.Items) != 1 || slices.Items[0].Name != "n2-gpu" {
		t.Fatalf("resourceslices by spec.nodeName: %v %+v", err, slices)
	}
	_, err = rs.ResourceSlices().Create(ctx, &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "both"}, Spec: resourcev1.ResourceSliceSpec{
		Driver: "gpu.example.com", NodeName: ptr.To("n1"), AllNodes: ptr.To(true), Pool: resourcev1.ResourcePool{Name: "p"},
		Devices: []resourcev1.Device{{Name: "d"}, {Name: "d"}},
	}}, metav1.CreateOptions{})
	for _, want := range []string{"spec: Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set",
		"spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero", `spec.devices[1]: Duplicate value: "d"`} {
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("invalid ResourceSlice: want %q in %v", want, err)
		}
	}

	rule, err := rs.DeviceTaintRules().Create(ctx, &resourcev1.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "drain-n1"}, Spec: resourcev1.DeviceTaintRuleSpec{
		DeviceSelector: &resourcev1.DeviceTaintSelector{Driver: ptr.To("gpu.example.com"), Pool: ptr.To("n1")},
		Taint:          resourcev1.DeviceTaint{Key: "example.com/maintenance", Value: "true", Effect: resourcev1.DeviceTaintEffectNoExecute},
	}}, metav1.CreateOptions{})
	if err != nil || rule.Spec.Taint.TimeAdded == nil {
		t.Fatalf("DeviceTaintRule (timeAdded defaulted): %v %+v", err, rule)
	}
	rule.Status.Conditions = []metav1.Condition{{Type: "EvictionInProgress", Status: metav1.ConditionFalse, Reason: "Completed", LastTransitionTime: metav1.Now()}}
	if _, err := rs.DeviceTaintRules().UpdateStatus(ctx, rule, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("DeviceTaintRule status: %v", err)
	}

	k := newKubectl(t, srv)
	for _, c := range []struct{ resource, header, row string }{
		{"deviceclasses", "NAME AGE", "gpu.example.com"},
		{"resourceclaims", "NAME STATE AGE", "gpu allocated,reserved"},
		{"resourceclaimtemplates", "NAME AGE", "gpu-tmpl"},
		{"resourceslices", "NAME NODE DRIVER POOL AGE", "n1-gpu n1 gpu.example.com n1"},
		{"devicetaintrules", "NAME KEY VALUE EFFECT TIMEADDED AGE", "drain-n1 example.com/maintenance true NoExecute"},
	} {
		out := k.ok("get", c.resource, "-n", "default")
		if h := header(out); h != c.header {
			t.Errorf("kubectl get %s columns: %q", c.resource, h)
		}
		if !strings.Contains(strings.Join(strings.Fields(out), " "), c.row) {
			t.Errorf("kubectl get %s: want %q in\n%s", c.resource, c.row, out)
		}
	}
	out := k.ok("api-resources", "--api-group=resource.k8s.io", "--no-headers")
	for _, r := range []string{"deviceclasses", "devicetaintrules", "resourceclaims", "resourceclaimtemplates", "resourceslices"} {
		if !strings.Contains(out, r) {
			t.Errorf("kubectl api-resources --api-group=resource.k8s.io: no %s in\n%s", r, out)
		}
	}
	if out := k.ok("explain", "resourceclaims.spec.devices.requests.exactly"); !strings.Contains(out, "deviceClassName") {
		t.Errorf("kubectl explain resourceclaims.spec.devices.requests.exactly:\n%s", out)
	}
	// Server-side apply knows the schema of resource.k8s.io/v1 (client-go's built-in types).
	k.ok("apply", "--server-side", "-f", k.file("claim.yaml", `apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: applied, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
`))
	if out := k.ok("get", "resourceclaim", "applied", "-n", "default", "-o", "jsonpath={.metadata.managedFields[0].manager} {.spec.devices.requests[0].exactly.count}"); out != "kubectl 1" {
		t.Errorf("applied ResourceClaim: manager and defaulted count %q", out)
	}
}
