package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The dynamic resource allocation kinds of resource.k8s.io/v1 (ResourceClaim,
// ResourceClaimTemplate, DeviceClass, ResourceSlice, DeviceTaintRule) with the rules,
// messages and field paths of upstream's pkg/apis/resource/validation (v1.37) for their
// structure: names, the request and node-selection unions, sizes, uniqueness, references
// between requests, constraints and configs, the immutable specs, and the status
// invariants (reservedFor needs an allocation; an allocation is never changed). Not
// checked: CEL expressions are not compiled (upstream compiles them with
// k8s.io/dynamic-resource-allocation/cel; wasmkube evaluates none, its scheduler allocates
// no devices), and the capacity request policies of consumable capacity. docs/api-objects.md.

var (
	deviceAllocationModes = []resourcev1.DeviceAllocationMode{resourcev1.DeviceAllocationModeAll, resourcev1.DeviceAllocationModeExactCount}
	deviceTaintEffects    = sets.New(resourcev1.DeviceTaintEffectNoSchedule, resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNone)
	deviceTolerationOps   = []resourcev1.DeviceTolerationOperator{resourcev1.DeviceTolerationOpEqual, resourcev1.DeviceTolerationOpExists}
	allocationSources     = []resourcev1.AllocationConfigSource{resourcev1.AllocationConfigSourceClaim, resourcev1.AllocationConfigSourceClass}
)

func validateDRA(obj runtime.Object) (field.ErrorList, bool) {
	switch o := obj.(type) {
	case *resourcev1.ResourceClaim:
		errs := objectMeta(&o.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
		return append(errs, validateDeviceClaim(&o.Spec.Devices, field.NewPath("spec", "devices"))...), true
	case *resourcev1.ResourceClaimTemplate:
		errs := objectMeta(&o.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
		p := field.NewPath("spec")
		errs = append(errs, templateObjectMeta(&o.Spec.ObjectMeta, p.Child("metadata"))...)
		return append(errs, validateDeviceClaim(&o.Spec.Spec.Devices, p.Child("spec", "devices"))...), true
	case *resourcev1.DeviceClass:
		errs := objectMeta(&o.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
		return append(errs, validateDeviceClassSpec(&o.Spec, field.NewPath("spec"))...), true
	case *resourcev1.ResourceSlice:
		errs := objectMeta(&o.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
		return append(errs, validateResourceSliceSpec(&o.Spec, field.NewPath("spec"))...), true
	case *resourcev1.DeviceTaintRule:
		errs := objectMeta(&o.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
		return append(errs, validateDeviceTaintRuleSpec(&o.Spec, nil, field.NewPath("spec"))...), true
	}
	return nil, false
}

// validateDRAUpdate: a main write cannot change status and a status write cannot change the
// spec (the server copies the other half), so one function holds the rules of both, as
// upstream's ValidateResourceClaimUpdate and ValidateResourceClaimStatusUpdate.
func validateDRAUpdate(obj, old runtime.Object) (field.ErrorList, bool) {
	spec := field.NewPath("spec")
	switch o := obj.(type) {
	case *resourcev1.ResourceClaim:
		oc := old.(*resourcev1.ResourceClaim)
		errs := objectMeta(&o.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
		errs = append(errs, metaUpdate(&o.ObjectMeta, &oc.ObjectMeta)...)
		// The spec is immutable; upstream checks only that on update.
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(o.Spec, oc.Spec, spec)...)
		return append(errs, validateClaimStatusUpdate(o, oc)...), true
	case *resourcev1.ResourceClaimTemplate:
		ot := old.(*resourcev1.ResourceClaimTemplate)
		errs := metaUpdate(&o.ObjectMeta, &ot.ObjectMeta)
		return append(errs, apimachineryvalidation.ValidateImmutableField(o.Spec, ot.Spec, spec)...), true
	case *resourcev1.DeviceClass:
		errs, _ := validateDRA(o)
		return append(errs, metaUpdate(&o.ObjectMeta, &old.(*resourcev1.DeviceClass).ObjectMeta)...), true
	case *resourcev1.ResourceSlice:
		os := old.(*resourcev1.ResourceSlice)
		errs := metaUpdate(&o.ObjectMeta, &os.ObjectMeta)
		errs = append(errs, validateResourceSliceSpec(&o.Spec, spec)...)
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(o.Spec.Pool.Name, os.Spec.Pool.Name, spec.Child("pool", "name"))...)
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(o.Spec.Driver, os.Spec.Driver, spec.Child("driver"))...)
		return append(errs, apimachineryvalidation.ValidateImmutableField(o.Spec.NodeName, os.Spec.NodeName, spec.Child("nodeName"))...), true
	case *resourcev1.DeviceTaintRule:
		or := old.(*resourcev1.DeviceTaintRule)
		errs := metaUpdate(&o.ObjectMeta, &or.ObjectMeta)
		errs = append(errs, validateDeviceTaintRuleSpec(&o.Spec, &or.Spec, spec)...)
		st := field.NewPath("status", "conditions")
		errs = append(errs, metav1validation.ValidateConditions(o.Status.Conditions, st)...)
		if n := len(o.Status.Conditions); n > resourcev1.DeviceTaintRuleStatusMaxConditions {
			errs = append(errs, field.TooMany(st, n, resourcev1.DeviceTaintRuleStatusMaxConditions))
		}
		return errs, true
	}
	return nil, false
}

// dns1123Label and dns1123Subdomain are upstream's corevalidation helpers of the same name.
func dns1123Label(v string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Label(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

func dns1123Subdomain(v string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Subdomain(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

// tooMany is upstream's size check of validateSlice/validateSet: past the limit only the
// count is reported (and the items are not looked at).
func tooMany(n, max int, p *field.Path) field.ErrorList {
	if max >= 0 && n > max {
		return field.ErrorList{field.TooMany(p, n, max)}
	}
	return nil
}

// duplicates reports each repeated key, at the index of its repetition.
func duplicates[T any, K comparable](items []T, key func(T) K, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[K]()
	for i, it := range items {
		k := key(it)
		if seen.Has(k) {
			errs = append(errs, field.Duplicate(p.Index(i), k))
		}
		seen.Insert(k)
	}
	return errs
}

// templateObjectMeta is upstream's ValidateTemplateObjectMeta: a claim template's metadata
// may carry labels and annotations only.
func templateObjectMeta(m *metav1.ObjectMeta, p *field.Path) field.ErrorList {
	errs := apimachineryvalidation.ValidateAnnotations(m.Annotations, p.Child("annotations"))
	errs = append(errs, metav1validation.ValidateLabels(m.Labels, p.Child("labels"))...)
	set := []struct {
		name string
		set  bool
	}{
		{"name", m.Name != ""}, {"generateName", m.GenerateName != ""}, {"namespace", m.Namespace != ""},
		{"uid", m.UID != ""}, {"resourceVersion", m.ResourceVersion != ""}, {"generation", m.Generation != 0},
		{"creationTimestamp", !m.CreationTimestamp.IsZero()}, {"deletionTimestamp", m.DeletionTimestamp != nil},
		{"deletionGracePeriodSeconds", m.DeletionGracePeriodSeconds != nil}, {"ownerReferences", len(m.OwnerReferences) > 0},
		{"finalizers", len(m.Finalizers) > 0}, {"managedFields", len(m.ManagedFields) > 0},
	}
	for _, f := range set {
		if f.set {
			errs = append(errs, field.Forbidden(p.Child(f.name), "cannot be set"))
		}
	}
	return errs
}

// requestNames maps each request to its subrequests (nil when it has none).
type requestNames map[string]sets.Set[string]

func gatherRequestNames(c *resourcev1.DeviceClaim) requestNames {
	out := requestNames{}
	for _, r := range c.Requests {
		if len(r.FirstAvailable) == 0 {
			out[r.Name] = nil
			continue
		}
		subs := sets.New[string]()
		for _, s := range r.FirstAvailable {
			subs.Insert(s.Name)
		}
		out[r.Name] = subs
	}
	return out
}

func (r requestNames) has(ref string) bool {
	parts := strings.Split(ref, "/")
	if len(parts) > 2 {
		return false
	}
	subs, ok := r[parts[0]]
	if !ok {
		return false
	}
	return len(parts) == 1 || subs.Has(parts[1])
}

const requestRefMessage = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"

func validateRequestRefs(refs []string, names requestNames, p *field.Path) field.ErrorList {
	if errs := tooMany(len(refs), resourcev1.DeviceRequestsMaxSize, p); errs != nil {
		return errs
	}
	var errs field.ErrorList
	for i, ref := range refs {
		ip := p.Index(i)
		parts := strings.Split(ref, "/")
		if len(parts) > 2 {
			errs = append(errs, field.Invalid(ip, ref, requestRefMessage))
			continue
		}
		for _, part := range parts {
			errs = append(errs, dns1123Label(part, ip)...)
		}
		if !names.has(ref) {
			errs = append(errs, field.Invalid(ip, ref, requestRefMessage))
		}
	}
	return append(errs, duplicates(refs, func(s string) string { return s }, p)...)
}

func validateDeviceClaim(c *resourcev1.DeviceClaim, p *field.Path) field.ErrorList {
	names := gatherRequestNames(c)
	rp := p.Child("requests")
	errs := tooMany(len(c.Requests), resourcev1.DeviceRequestsMaxSize, rp)
	if errs == nil {
		for i, r := range c.Requests {
			errs = append(errs, validateDeviceRequest(r, rp.Index(i))...)
		}
		errs = append(errs, duplicates(c.Requests, func(r resourcev1.DeviceRequest) string { return r.Name }, rp)...)
	}
	cp := p.Child("constraints")
	if more := tooMany(len(c.Constraints), resourcev1.DeviceConstraintsMaxSize, cp); more != nil {
		errs = append(errs, more...)
	} else {
		for i, con := range c.Constraints {
			ip := cp.Index(i)
			errs = append(errs, validateRequestRefs(con.Requests, names, ip.Child("requests"))...)
			switch {
			case con.MatchAttribute != nil:
				errs = append(errs, fullyQualifiedName(string(*con.MatchAttribute), ip.Child("matchAttribute"))...)
			case con.DistinctAttribute != nil:
				errs = append(errs, fullyQualifiedName(string(*con.DistinctAttribute), ip.Child("distinctAttribute"))...)
			default:
				// DRAConsumableCapacity is on in 1.37: upstream's message for this case.
				errs = append(errs, field.Required(ip, `exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple fields are set`))
			}
		}
	}
	fp := p.Child("config")
	if more := tooMany(len(c.Config), resourcev1.DeviceConfigMaxSize, fp); more != nil {
		errs = append(errs, more...)
	} else {
		for i, cfg := range c.Config {
			ip := fp.Index(i)
			errs = append(errs, validateRequestRefs(cfg.Requests, names, ip.Child("requests"))...)
			errs = append(errs, validateDeviceConfiguration(cfg.DeviceConfiguration, ip)...)
		}
	}
	return errs
}

func validateDeviceRequest(r resourcev1.DeviceRequest, p *field.Path) field.ErrorList {
	errs := dns1123Label(r.Name, p.Child("name"))
	switch {
	case len(r.FirstAvailable) == 0 && r.Exactly == nil:
		errs = append(errs, field.Required(p, "exactly one of `exactly` or `firstAvailable` is required"))
	case len(r.FirstAvailable) > 0 && r.Exactly != nil:
		errs = append(errs, field.Invalid(p, nil, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"))
	case r.Exactly != nil:
		e, ep := r.Exactly, p.Child("exactly")
		errs = append(errs, validateDeviceClassRef(e.DeviceClassName, ep.Child("deviceClassName"))...)
		errs = append(errs, validateSelectors(e.Selectors, ep.Child("selectors"))...)
		errs = append(errs, validateAllocationMode(e.AllocationMode, e.Count, ep)...)
		errs = append(errs, validateDeviceTolerations(e.Tolerations, ep.Child("tolerations"))...)
	default:
		fp := p.Child("firstAvailable")
		if more := tooMany(len(r.FirstAvailable), resourcev1.FirstAvailableDeviceRequestMaxSize, fp); more != nil {
			return append(errs, more...)
		}
		for i, s := range r.FirstAvailable {
			sp := fp.Index(i)
			errs = append(errs, dns1123Label(s.Name, sp.Child("name"))...)
			errs = append(errs, validateDeviceClassRef(s.DeviceClassName, sp.Child("deviceClassName"))...)
			errs = append(errs, validateSelectors(s.Selectors, sp.Child("selectors"))...)
			errs = append(errs, validateAllocationMode(s.AllocationMode, s.Count, sp)...)
			errs = append(errs, validateDeviceTolerations(s.Tolerations, sp.Child("tolerations"))...)
		}
		errs = append(errs, duplicates(r.FirstAvailable, func(s resourcev1.DeviceSubRequest) string { return s.Name }, fp)...)
	}
	return errs
}

func validateDeviceClassRef(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	return dns1123Subdomain(name, p)
}

func validateAllocationMode(mode resourcev1.DeviceAllocationMode, count int64, p *field.Path) field.ErrorList {
	switch mode {
	case resourcev1.DeviceAllocationModeAll:
		if count != 0 {
			return field.ErrorList{field.Invalid(p.Child("count"), count, fmt.Sprintf("must not be specified when allocationMode is '%s'", mode))}
		}
	case resourcev1.DeviceAllocationModeExactCount:
		if count <= 0 {
			return field.ErrorList{field.Invalid(p.Child("count"), count, "must be greater than zero")}
		}
	default:
		return field.ErrorList{field.NotSupported(p.Child("allocationMode"), mode, deviceAllocationModes)}
	}
	return nil
}

func validateSelectors(sel []resourcev1.DeviceSelector, p *field.Path) field.ErrorList {
	if errs := tooMany(len(sel), resourcev1.DeviceSelectorsMaxSize, p); errs != nil {
		return errs
	}
	var errs field.ErrorList
	for i, s := range sel {
		ip := p.Index(i)
		switch {
		case s.CEL == nil:
			errs = append(errs, field.Required(ip.Child("cel"), ""))
		case strings.TrimSpace(s.CEL.Expression) == "":
			errs = append(errs, field.Required(ip.Child("cel", "expression"), ""))
		case len(s.CEL.Expression) > resourcev1.CELSelectorExpressionMaxLength:
			errs = append(errs, field.TooLong(ip.Child("cel", "expression"), "", resourcev1.CELSelectorExpressionMaxLength))
		}
	}
	return errs
}

func validateDeviceTolerations(ts []resourcev1.DeviceToleration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range ts {
		ip := p.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, ip.Child("key"))...)
		}
		switch t.Operator {
		case resourcev1.DeviceTolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(ip.Child("value"), t.Value, "must be empty for operator `Exists`"))
			}
		case resourcev1.DeviceTolerationOpEqual:
			errs = append(errs, labelValue(t.Value, ip.Child("value"))...)
		case "":
			errs = append(errs, field.Required(ip.Child("operator"), ""))
		default:
			errs = append(errs, field.NotSupported(ip.Child("operator"), t.Operator, deviceTolerationOps))
		}
		if t.Effect != "" && !deviceTaintEffects.Has(t.Effect) {
			errs = append(errs, field.NotSupported(ip.Child("effect"), t.Effect, sets.List(deviceTaintEffects)))
		}
	}
	return errs
}

func labelValue(v string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsValidLabelValue(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

func validateDeviceConfiguration(c resourcev1.DeviceConfiguration, p *field.Path) field.ErrorList {
	if c.Opaque == nil {
		return field.ErrorList{field.Required(p.Child("opaque"), "")}
	}
	op := p.Child("opaque")
	errs := csiDriverName(c.Opaque.Driver, op.Child("driver"))
	raw := c.Opaque.Parameters.Raw
	switch {
	case len(raw) == 0:
		errs = append(errs, field.Required(op.Child("parameters"), ""))
	case len(raw) > resourcev1.OpaqueParametersMaxLength:
		errs = append(errs, field.TooLong(op.Child("parameters"), "", resourcev1.OpaqueParametersMaxLength))
	}
	return errs
}

// fullyQualifiedName is upstream's validateFullyQualifiedName: a domain, a slash and a C
// identifier of at most 32 characters.
func fullyQualifiedName(name string, p *field.Path) field.ErrorList {
	domain, id, ok := strings.Cut(name, "/")
	if !ok || domain == "" {
		return field.ErrorList{field.Required(p, "a fully qualified name must be a domain and a name separated by a slash")}
	}
	errs := dns1123Subdomain(domain, p)
	if len(domain) > resourcev1.DeviceMaxDomainLength {
		errs = append(errs, field.TooLong(p, "", resourcev1.DeviceMaxDomainLength))
	}
	return append(errs, cIdentifier(id, p)...)
}

func cIdentifier(id string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsCIdentifier(id) {
		errs = append(errs, field.Invalid(p, id, msg))
	}
	if len(id) > resourcev1.DeviceMaxIDLength {
		errs = append(errs, field.TooLong(p, "", resourcev1.DeviceMaxIDLength))
	}
	return errs
}

// qualifiedAttributeName is upstream's validateQualifiedName for attribute and capacity
// keys: a C identifier, optionally prefixed by a domain and a slash.
func qualifiedAttributeName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "name required")}
	}
	domain, id, ok := strings.Cut(name, "/")
	if !ok {
		return cIdentifier(name, p)
	}
	errs := dns1123Subdomain(domain, p)
	if len(domain) > resourcev1.DeviceMaxDomainLength {
		errs = append(errs, field.TooLong(p, "", resourcev1.DeviceMaxDomainLength))
	}
	return append(errs, cIdentifier(id, p)...)
}

func validateDeviceClassSpec(s *resourcev1.DeviceClassSpec, p *field.Path) field.ErrorList {
	errs := validateSelectors(s.Selectors, p.Child("selectors"))
	cp := p.Child("config")
	if more := tooMany(len(s.Config), resourcev1.DeviceConfigMaxSize, cp); more != nil {
		errs = append(errs, more...)
	} else {
		for i, c := range s.Config {
			errs = append(errs, validateDeviceConfiguration(c.DeviceConfiguration, cp.Index(i))...)
		}
	}
	if n := s.ExtendedResourceName; n != nil && !isExtendedResourceName(corev1.ResourceName(*n)) {
		errs = append(errs, field.Invalid(p.Child("extendedResourceName"), *n, "must be a valid extended resource name"))
	}
	return errs
}

// isExtendedResourceName is upstream's helper: a qualified name outside the
// kubernetes.io/ namespace, not prefixed requests., that is valid as requests.<name>.
func isExtendedResourceName(name corev1.ResourceName) bool {
	s := string(name)
	if strings.HasPrefix(s, "requests.") || !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) {
		return false
	}
	return len(utilvalidation.IsQualifiedName("requests."+s)) == 0
}

func validateResourceSliceSpec(s *resourcev1.ResourceSliceSpec, p *field.Path) field.ErrorList {
	errs := csiDriverName(s.Driver, p.Child("driver"))
	pp := p.Child("pool")
	errs = append(errs, poolName(s.Pool.Name, pp.Child("name"))...)
	if s.Pool.ResourceSliceCount <= 0 {
		errs = append(errs, field.Invalid(pp.Child("resourceSliceCount"), s.Pool.ResourceSliceCount, "must be greater than zero"))
	}
	if s.Pool.Generation < 0 {
		errs = append(errs, field.Invalid(pp.Child("generation"), s.Pool.Generation, "must be greater than or equal to zero"))
	}
	var set []string
	if s.NodeName != nil {
		if *s.NodeName != "" {
			set = append(set, "`nodeName`")
			errs = append(errs, dns1123Subdomain(*s.NodeName, p.Child("nodeName"))...)
		} else {
			errs = append(errs, field.Invalid(p.Child("nodeName"), *s.NodeName, "must be either unset or set to a non-empty string"))
		}
	}
	if s.NodeSelector != nil {
		set = append(set, "`nodeSelector`")
		errs = append(errs, validateNodeSelector(s.NodeSelector, p.Child("nodeSelector"))...)
		if len(s.NodeSelector.NodeSelectorTerms) != 1 {
			errs = append(errs, field.Invalid(p.Child("nodeSelector", "nodeSelectorTerms"), s.NodeSelector.NodeSelectorTerms, "must have exactly one node selector term"))
		}
	}
	for _, b := range []struct {
		name string
		v    *bool
	}{{"allNodes", s.AllNodes}, {"perDeviceNodeSelection", s.PerDeviceNodeSelection}} {
		if b.v == nil {
			continue
		}
		if *b.v {
			set = append(set, "`"+b.name+"`")
		} else {
			errs = append(errs, field.Invalid(p.Child(b.name), *b.v, "must be either unset or set to true"))
		}
	}
	switch len(set) {
	case 0:
		errs = append(errs, field.Required(p, "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"))
	case 1:
	default:
		errs = append(errs, field.Invalid(p, fmt.Sprintf("{%s}", strings.Join(set, ", ")),
			"exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"))
	}
	if s.SharedCounters != nil && s.Devices != nil {
		errs = append(errs, field.Invalid(p, "", "only one of `sharedCounters` or `devices` is allowed"))
	}
	max := resourcev1.ResourceSliceMaxDevices
	for _, d := range s.Devices {
		if len(d.Taints) > 0 || len(d.ConsumesCounters) > 0 {
			max = resourcev1.ResourceSliceMaxDevicesWithAdvancedFeatures
		}
	}
	dp := p.Child("devices")
	if more := tooMany(len(s.Devices), max, dp); more != nil {
		errs = append(errs, more...)
	} else {
		perDevice := s.PerDeviceNodeSelection != nil && *s.PerDeviceNodeSelection
		for i, d := range s.Devices {
			errs = append(errs, validateDevice(d, perDevice, dp.Index(i))...)
		}
		errs = append(errs, duplicates(s.Devices, func(d resourcev1.Device) string { return d.Name }, dp)...)
	}
	sp := p.Child("sharedCounters")
	if more := tooMany(len(s.SharedCounters), resourcev1.ResourceSliceMaxCounterSets, sp); more != nil {
		errs = append(errs, more...)
	} else {
		for i, cs := range s.SharedCounters {
			ip := sp.Index(i)
			if cs.Name == "" {
				errs = append(errs, field.Required(ip.Child("name"), ""))
			} else {
				errs = append(errs, dns1123Label(cs.Name, ip.Child("name"))...)
			}
			if len(cs.Counters) == 0 {
				errs = append(errs, field.Required(ip.Child("counters"), ""))
			}
		}
		errs = append(errs, duplicates(s.SharedCounters, func(c resourcev1.CounterSet) string { return c.Name }, sp)...)
	}
	return errs
}

// poolName: each /-separated part of a pool name is a DNS subdomain, the whole at most 253.
func poolName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	if len(name) > resourcev1.PoolNameMaxLength {
		errs = append(errs, field.TooLong(p, "", resourcev1.PoolNameMaxLength))
	}
	for _, part := range strings.Split(name, "/") {
		errs = append(errs, dns1123Subdomain(part, p)...)
	}
	return errs
}

func validateDevice(d resourcev1.Device, perDevice bool, p *field.Path) field.ErrorList {
	errs := dns1123Label(d.Name, p.Child("name"))
	if n := len(d.Attributes) + len(d.Capacity); n > resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
		errs = append(errs, field.Invalid(p, n, fmt.Sprintf("the total number of attributes and capacities must not exceed %d", resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice)))
	}
	for _, k := range sets.List(sets.KeySet(d.Attributes)) {
		kp := p.Child("attributes").Key(string(k))
		errs = append(errs, qualifiedAttributeName(string(k), kp)...)
		errs = append(errs, validateDeviceAttribute(d.Attributes[k], kp)...)
	}
	for _, k := range sets.List(sets.KeySet(d.Capacity)) {
		errs = append(errs, qualifiedAttributeName(string(k), p.Child("capacity").Key(string(k)))...)
	}
	tp := p.Child("taints")
	if more := tooMany(len(d.Taints), resourcev1.DeviceTaintsMaxLength, tp); more != nil {
		errs = append(errs, more...)
	} else {
		for i, t := range d.Taints {
			errs = append(errs, validateDeviceTaint(t, nil, tp.Index(i))...)
		}
	}
	nodeSel := d.NodeName != nil || d.NodeSelector != nil || d.AllNodes != nil
	switch {
	case perDevice:
		var set []string
		if d.NodeName != nil {
			if *d.NodeName != "" {
				set = append(set, "`nodeName`")
				errs = append(errs, dns1123Subdomain(*d.NodeName, p.Child("nodeName"))...)
			} else {
				errs = append(errs, field.Invalid(p.Child("nodeName"), *d.NodeName, "must not be empty"))
			}
		}
		if d.NodeSelector != nil {
			set = append(set, "`nodeSelector`")
			errs = append(errs, validateNodeSelector(d.NodeSelector, p.Child("nodeSelector"))...)
		}
		if d.AllNodes != nil {
			if *d.AllNodes {
				set = append(set, "`allNodes`")
			} else {
				errs = append(errs, field.Invalid(p.Child("allNodes"), *d.AllNodes, "must be either unset or set to true"))
			}
		}
		const msg = "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec"
		switch len(set) {
		case 0:
			errs = append(errs, field.Required(p, msg))
		case 1:
		default:
			errs = append(errs, field.Invalid(p, fmt.Sprintf("{%s}", strings.Join(set, ", ")), msg))
		}
	case nodeSel:
		errs = append(errs, field.Invalid(p, nil, "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec"))
	}
	return errs
}

// validateDeviceAttribute is upstream's: exactly one of the scalar or list values, lists
// not empty when given, strings at most 64 bytes.
func validateDeviceAttribute(a resourcev1.DeviceAttribute, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	for _, set := range []bool{a.IntValue != nil, a.BoolValue != nil, a.StringValue != nil, a.VersionValue != nil} {
		if set {
			n++
		}
	}
	if a.StringValue != nil && len(*a.StringValue) > resourcev1.DeviceAttributeMaxValueLength {
		errs = append(errs, field.TooLong(p.Child("string"), "", resourcev1.DeviceAttributeMaxValueLength))
	}
	for _, l := range []struct {
		name string
		set  bool
		n    int
		v    any
	}{
		{"bools", a.BoolValues != nil, len(a.BoolValues), a.BoolValues}, {"ints", a.IntValues != nil, len(a.IntValues), a.IntValues},
		{"strings", a.StringValues != nil, len(a.StringValues), a.StringValues}, {"versions", a.VersionValues != nil, len(a.VersionValues), a.VersionValues},
	} {
		if !l.set {
			continue
		}
		n++
		if l.n == 0 {
			errs = append(errs, field.Invalid(p.Child(l.name), l.v, "must not be empty if specified"))
		}
	}
	for i, v := range a.StringValues {
		if len(v) > resourcev1.DeviceAttributeMaxValueLength {
			errs = append(errs, field.TooLong(p.Child("strings").Index(i), "", resourcev1.DeviceAttributeMaxValueLength))
		}
	}
	switch {
	case n == 0:
		errs = append(errs, field.Invalid(p, "", "exactly one value must be specified"))
	case n > 1:
		errs = append(errs, field.Invalid(p, a, "exactly one value must be specified"))
	}
	return errs
}

func validateDeviceTaintRuleSpec(s, old *resourcev1.DeviceTaintRuleSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if f := s.DeviceSelector; f != nil {
		fp := p.Child("deviceSelector")
		if f.Driver != nil {
			errs = append(errs, csiDriverName(*f.Driver, fp.Child("driver"))...)
		}
		if f.Pool != nil {
			errs = append(errs, poolName(*f.Pool, fp.Child("pool"))...)
		}
		if f.Device != nil {
			errs = append(errs, dns1123Label(*f.Device, fp.Child("device"))...)
		}
	}
	var oldTaint *resourcev1.DeviceTaint
	if old != nil {
		oldTaint = &old.Taint
	}
	return append(errs, validateDeviceTaint(s.Taint, oldTaint, p.Child("taint"))...)
}

func validateDeviceTaint(t resourcev1.DeviceTaint, old *resourcev1.DeviceTaint, p *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabelName(t.Key, p.Child("key"))
	if t.Value != "" {
		errs = append(errs, labelValue(t.Value, p.Child("value"))...)
	}
	if old == nil || old.Effect != t.Effect {
		switch {
		case t.Effect == "":
			errs = append(errs, field.Required(p.Child("effect"), ""))
		case !deviceTaintEffects.Has(t.Effect):
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, sets.List(deviceTaintEffects)))
		}
	}
	return errs
}

// validateClaimStatusUpdate is upstream's validateResourceClaimStatusUpdate for what it
// checks of the structure: reservedFor entries, the allocation's results, and the
// invariants between old and new status.
func validateClaimStatusUpdate(c, old *resourcev1.ResourceClaim) field.ErrorList {
	sp := field.NewPath("status")
	st, ost := &c.Status, &old.Status
	rp := sp.Child("reservedFor")
	errs := tooMany(len(st.ReservedFor), resourcev1.ResourceClaimReservedForMaxSize, rp)
	if errs == nil {
		for i, ref := range st.ReservedFor {
			ip := rp.Index(i)
			if ref.Resource == "" {
				errs = append(errs, field.Required(ip.Child("resource"), ""))
			}
			if ref.Name == "" {
				errs = append(errs, field.Required(ip.Child("name"), ""))
			}
			if ref.UID == "" {
				errs = append(errs, field.Required(ip.Child("uid"), ""))
			}
		}
		errs = append(errs, duplicates(st.ReservedFor, func(r resourcev1.ResourceClaimConsumerReference) string { return string(r.UID) }, rp)...)
	}
	if len(st.ReservedFor) > 0 {
		if st.Allocation == nil {
			errs = append(errs, field.Forbidden(rp, "may not be specified when `allocated` is not set"))
		} else if c.DeletionTimestamp != nil {
			oldSet := sets.New[string]()
			for _, r := range ost.ReservedFor {
				oldSet.Insert(string(r.UID))
			}
			for _, r := range st.ReservedFor {
				if !oldSet.Has(string(r.UID)) {
					errs = append(errs, field.Forbidden(rp, "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set"))
					break
				}
			}
		}
	}
	ap := sp.Child("allocation")
	switch {
	case ost.Allocation != nil && st.Allocation != nil:
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(st.Allocation, ost.Allocation, ap)...)
	case st.Allocation != nil:
		names := gatherRequestNames(&c.Spec.Devices)
		resp := ap.Child("devices", "results")
		if more := tooMany(len(st.Allocation.Devices.Results), resourcev1.AllocationResultsMaxSize, resp); more != nil {
			errs = append(errs, more...)
		} else {
			for i, r := range st.Allocation.Devices.Results {
				ip := resp.Index(i)
				if !names.has(r.Request) {
					errs = append(errs, field.Invalid(ip.Child("request"), r.Request, requestRefMessage))
				}
				errs = append(errs, csiDriverName(r.Driver, ip.Child("driver"))...)
				errs = append(errs, poolName(r.Pool, ip.Child("pool"))...)
				errs = append(errs, dns1123Label(r.Device, ip.Child("device"))...)
			}
		}
		if st.Allocation.NodeSelector != nil {
			errs = append(errs, validateNodeSelector(st.Allocation.NodeSelector, ap.Child("nodeSelector"))...)
		}
	}
	return errs
}
