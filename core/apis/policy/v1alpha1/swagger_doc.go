package v1alpha1

// The descriptions `kubectl explain` shows (the API server's OpenAPI documents read them
// through SwaggerDoc, as k8s.io/api's types carry theirs).

func (WasmPolicy) SwaggerDoc() map[string]string {
	return map[string]string{
		"":         "WasmPolicy is a wasm policy module and the hook it serves, loaded by every component that runs the hook: the API servers (admission.*), the schedulers (scheduler.*) or the kubelets (kubelet.*). Cluster-scoped.",
		"metadata": "Standard object's metadata.",
		"spec":     "What the policy runs, where and how.",
		"status":   "What the cluster made of the policy: the resolved digest and each component's report.",
	}
}

func (WasmPolicyList) SwaggerDoc() map[string]string {
	return map[string]string{"": "WasmPolicyList is a list of WasmPolicies.", "items": "The policies."}
}

func (WasmPolicySpec) SwaggerDoc() map[string]string {
	return map[string]string{
		"":              "WasmPolicySpec is what a policy runs, where and how.",
		"hook":          "The entry point the module serves: scheduler.filter, scheduler.score, scheduler.postFilter, admission.validate, admission.mutate, kubelet.probe or kubelet.preStop.",
		"mode":          "Enforce (the default): verdicts take effect. Monitor: the policy runs and its would-be verdicts are recorded, never applied.",
		"module":        "Where the module comes from: an OCI image or a file on every host.",
		"settings":      "The module's args: any JSON value, handed to the module's wasmkube_init at load, which may refuse them.",
		"failurePolicy": "What a failed call (trap, timeout, out of memory) means: Fail (the default) or Ignore.",
		"timeout":       "The time limit of one call (default: the component's: 100ms for the scheduler, 10s for admission). At most 30s.",
		"memoryLimit":   "The memory limit of one instance, 64Ki to 4Gi (default 64Mi).",
		"pool":          "The number of instances, so of parallel calls, 1 to 1024 (default: the component's).",
		"rollout":       "When components switch to a new revision: Progressive (the default; each as soon as it has it loaded) or AllOrNothing (all together, once every targeted component reports it Staged: compiled, checked and smoke-called; if any fails, none switches).",
		"revision":      "Set to roll back: the controller replaces the spec with that revision's (wasmkube policy history NAME lists them) and clears this field.",
		"scheduler":     "For scheduler.* hooks: the profile, weight and extension points.",
		"admission":     "For admission.* hooks: which requests the policy sees (required).",
		"kubelet":       "For kubelet.* hooks: the hook name pods ask for and the hosts that load it (required).",
	}
}

func (ModuleSource) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                 "ModuleSource says where a module comes from: exactly one of image and file.",
		"image":            "REGISTRY/REPO:TAG or REGISTRY/REPO@sha256:<64 hex>. A tag is resolved to a digest once (status.digest) and every component fetches that digest.",
		"file":             "An absolute path that holds the module on every host that loads it.",
		"sha256":           "The sha256 of the module's bytes (64 lowercase hex); a module with other bytes is refused.",
		"pullPolicy":       "Always, IfNotPresent or Never: when the registry is asked which manifest the tag names. Default: Always for the tag latest or none, else IfNotPresent.",
		"imagePullSecrets": "Secrets (kubernetes.io/dockerconfigjson) with the registry's credentials, by name and namespace.",
	}
}

func (SchedulerHook) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                "SchedulerHook places a scheduler policy.",
		"schedulerName":   "The scheduler profile the plugin joins (default: default-scheduler).",
		"weight":          "The weight of the module's Score, 1 to 100 (default 1).",
		"extensionPoints": "Enable only these of the module's extension points: PreFilter, Filter, PostFilter, PreScore, Score. Default: every point the module exports.",
	}
}

func (AdmissionHook) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                  "AdmissionHook says which requests an admission policy sees, as a webhook's configuration does.",
		"rules":             "The policy sees only the requests these match; at least one.",
		"namespaceSelector": "Only objects in namespaces with these labels (cluster-scoped objects always match).",
		"objectSelector":    "Only objects (or old objects) with these labels.",
		"validationActions": "What a denial does: Deny (the default), Warn, Audit; Deny and Warn exclude each other. admission.validate only.",
		"capabilities":      "The resources the policy may read through get_object and list_objects (granted only when the requester may get and list them).",
		"matchConditions":   "CEL expressions, as a ValidatingAdmissionPolicy's (name, expression; at most 64): the policy sees a request only when every one is true; an expression that fails to evaluate follows failurePolicy.",
	}
}

func (Rule) SwaggerDoc() map[string]string {
	return map[string]string{
		"":            "Rule matches requests by API group, version, resource and operation; \"*\" matches any.",
		"apiGroups":   "API groups (\"\" is the core group).",
		"apiVersions": "API versions.",
		"resources":   "Resources, with an optional subresource (\"pods/status\", \"pods/*\").",
		"operations":  "CREATE, UPDATE, DELETE, CONNECT or *.",
	}
}

func (KubeletHook) SwaggerDoc() map[string]string {
	return map[string]string{
		"":             "KubeletHook says which pods and hosts a probe or preStop policy serves.",
		"hookName":     "The name pods ask for (a DNS label).",
		"nodeSelector": "The nodes whose kubelet loads the policy, by label (default: every node).",
		"capabilities": "Host functions beyond the sandbox the module may import: pod-network.",
	}
}

func (WasmPolicyStatus) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                   "WasmPolicyStatus is what the cluster made of the policy.",
		"observedGeneration": "The generation this status speaks of.",
		"digest":             "The module's digest: for an image, the manifest digest (sha256:...) the controller resolved the tag to for resolvedGeneration, which every component fetches; for a file, the sha256 of the bytes the components report.",
		"resolvedGeneration": "The generation digest was resolved for (image modules). Components load an image's generation only once it is resolved, so all of them run the same digest even if the registry moves the tag.",
		"resolvedImage":      "The spec.module.image digest was resolved from: a later generation with the same image keeps the digest without asking the registry, unless pullPolicy is Always.",
		"releasedGeneration": "rollout AllOrNothing: the last generation every targeted component reported Staged (compiled, checked, smoke-called); the components put it in force together when they see it.",
		"readyComponents":    "How many of the targeted components have the current generation Active.",
		"targetedComponents": "How many components should load the policy.",
		"components":         "One entry per API server, scheduler or kubelet that should load the policy.",
		"conditions":         "Ready (every targeted component Active) and Degraded (one or more Failed).",
		"revision":           "The number of the revision the spec is (a ControllerRevision in kube-system).",
	}
}

func (ComponentStatus) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                   "ComponentStatus is one component's report on a policy.",
		"name":               "The component instance: an API server's identity, a scheduler's, a node's name.",
		"component":          "apiserver, scheduler or kubelet.",
		"observedGeneration": "The policy generation the component acted on.",
		"digest":             "The module digest the component runs.",
		"phase":              "Pending, Fetching, Staged (AllOrNothing: loaded, held out of force until released), Active or Failed.",
		"mode":               "The mode the component runs the policy in: Enforce or Monitor.",
		"reason":             "A CamelCase reason for the phase.",
		"message":            "What happened, for a person.",
		"lastTransitionTime": "When the phase last changed.",
	}
}

func (WasmPolicyReport) SwaggerDoc() map[string]string {
	return map[string]string{
		"":         "WasmPolicyReport is one component's report on one WasmPolicy, written only by that component (an API server, a scheduler or a kubelet); the wasmpolicy controller rolls the reports up into the policy's status. Cluster-scoped; deleted with its policy.",
		"metadata": "Standard object's metadata.",
		"policy":   "The WasmPolicy's name.",
		"status":   "The component's status for the policy.",
	}
}

func (WasmPolicyReportList) SwaggerDoc() map[string]string {
	return map[string]string{"": "WasmPolicyReportList is a list of WasmPolicyReports.", "items": "The reports."}
}
