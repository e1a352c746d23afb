package openapi

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const fieldValidationDoc = "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered."

type param struct {
	name, typ, doc string
}

var (
	listParams = []param{
		{"allowWatchBookmarks", "boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\"."},
		{"continue", "string", "The continue option should be set when retrieving more results from the server."},
		{"fieldSelector", "string", "A selector to restrict the list of returned objects by their fields. Defaults to everything."},
		{"labelSelector", "string", "A selector to restrict the list of returned objects by their labels. Defaults to everything."},
		{"limit", "integer", "limit is a maximum number of responses to return for a list call."},
		{"resourceVersion", "string", "resourceVersion sets a constraint on what resource versions a request may be served from."},
		{"resourceVersionMatch", "string", "resourceVersionMatch determines how resourceVersion is applied to list calls."},
		{"sendInitialEvents", "boolean", "`sendInitialEvents=true` may be set together with `watch=true`."},
		{"timeoutSeconds", "integer", "Timeout for the list/watch call."},
		{"watch", "boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications."},
	}
	writeParams = []param{
		{"dryRun", "string", "When present, indicates that modifications should not be persisted."},
		{"fieldManager", "string", "fieldManager is a name associated with the actor or entity that is making these changes."},
		{"fieldValidation", "string", fieldValidationDoc},
	}
	patchParams = append(append([]param{}, writeParams...),
		param{"force", "boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people."})
	deleteParams = []param{
		{"dryRun", "string", "When present, indicates that modifications should not be persisted."},
		{"gracePeriodSeconds", "integer", "The duration in seconds before the object should be deleted. Value must be non-negative integer."},
		{"orphanDependents", "boolean", "Deprecated: please use the PropagationPolicy."},
		{"propagationPolicy", "string", "Whether and how garbage collection will be performed: Orphan, Background or Foreground."},
	}
	patchContentTypes = []string{"application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json"}
)

// docBuilder writes the paths of one document with its generator's dialect.
type docBuilder struct {
	g     *generator
	paths object
}

func (b *docBuilder) queryParam(p param) object {
	if b.g.ver == v3 {
		return object{"name": p.name, "in": "query", "description": p.doc, "schema": object{"type": p.typ, "uniqueItems": true}}
	}
	return object{"name": p.name, "in": "query", "description": p.doc, "type": p.typ, "uniqueItems": true}
}

func (b *docBuilder) pathParam(name, doc string) object {
	if b.g.ver == v3 {
		return object{"name": name, "in": "path", "required": true, "description": doc, "schema": object{"type": "string", "uniqueItems": true}}
	}
	return object{"name": name, "in": "path", "required": true, "description": doc, "type": "string", "uniqueItems": true}
}

// op is one operation; body is the request body type (nil for none), resp the 200 type.
type op struct {
	method, action, id, doc string
	gvk                     schema.GroupVersionKind
	params                  []param
	body, resp              reflect.Type
	patch                   bool
}

func (b *docBuilder) operation(o op, tag string) object {
	params := []any{}
	for _, p := range o.params {
		params = append(params, b.queryParam(p))
	}
	respRef := b.g.typeSchema(o.resp)
	out := object{
		"operationId":                     o.id,
		"description":                     o.doc,
		"tags":                            []any{tag},
		"x-kubernetes-action":             o.action,
		"x-kubernetes-group-version-kind": object{"group": o.gvk.Group, "version": o.gvk.Version, "kind": o.gvk.Kind},
	}
	code := "200"
	if o.method == "post" {
		code = "201"
	}
	if b.g.ver == v3 {
		media := object{}
		for _, ct := range []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"} {
			media[ct] = object{"schema": respRef}
		}
		out["responses"] = object{code: object{"description": "OK", "content": media}, "401": object{"description": "Unauthorized"}}
		if o.body != nil {
			bodyRef := b.g.typeSchema(o.body)
			content := object{"*/*": object{"schema": bodyRef}}
			if o.patch {
				content = object{}
				for _, ct := range patchContentTypes {
					content[ct] = object{"schema": bodyRef}
				}
			}
			out["requestBody"] = object{"content": content, "required": o.method != "delete"}
		}
	} else {
		out["responses"] = object{code: object{"description": "OK", "schema": respRef}, "401": object{"description": "Unauthorized"}}
		out["produces"] = []any{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}
		out["schemes"] = []any{"https"}
		consumes := []any{"*/*"}
		if o.patch {
			consumes = []any{}
			for _, ct := range patchContentTypes {
				consumes = append(consumes, ct)
			}
		}
		out["consumes"] = consumes
		if o.body != nil {
			params = append([]any{object{"name": "body", "in": "body", "required": o.method != "delete", "schema": b.g.typeSchema(o.body)}}, params...)
		}
	}
	out["parameters"] = params
	return out
}

func (b *docBuilder) addPath(path string, pathParams []any, tag string, ops ...op) {
	item := object{"parameters": append(pathParams, b.queryParam(param{"pretty", "string", "If 'true', then the output is pretty printed."}))}
	for _, o := range ops {
		item[o.method] = b.operation(o, tag)
	}
	b.paths[path] = item
}

// addResource writes the collection, item, all-namespaces and subresource paths of r.
func (b *docBuilder) addResource(r resource) {
	gvk := r.gv.WithKind(r.kind)
	group, tag := opGroup(r.gv)
	prefix := "/" + gvPath(r.gv)
	scope := ""
	var nsParams []any
	coll := prefix + "/" + r.plural
	if r.namespaced {
		scope = "Namespaced"
		nsParams = []any{b.pathParam("namespace", "object name and auth scope, such as for teams and projects")}
		coll = prefix + "/namespaces/{namespace}/" + r.plural
	}
	nameParam := b.pathParam("name", "name of the "+r.kind)
	objT, listT := elem(r.obj), elem(r.list)
	statusT := reflect.TypeOf(metav1.Status{})
	deleteT := reflect.TypeOf(metav1.DeleteOptions{})
	patchT := reflect.TypeOf(metav1.Patch{})

	collOps := []op{
		{method: "get", action: "list", id: "list" + group + scope + r.kind, doc: "list or watch objects of kind " + r.kind, gvk: gvk, params: listParams, resp: listT},
		{method: "post", action: "post", id: "create" + group + scope + r.kind, doc: "create a " + r.kind, gvk: gvk, params: writeParams, body: objT, resp: objT},
	}
	if !r.noDeleteCollection {
		collOps = append(collOps, op{method: "delete", action: "deletecollection", id: "delete" + group + "Collection" + scope + r.kind, doc: "delete collection of " + r.kind, gvk: gvk, params: append(append([]param{}, deleteParams...), listParams...), body: deleteT, resp: statusT})
	}
	b.addPath(coll, nsParams, tag, collOps...)
	itemParams := append(append([]any{}, nsParams...), nameParam)
	b.addPath(coll+"/{name}", itemParams, tag,
		op{method: "get", action: "get", id: "read" + group + scope + r.kind, doc: "read the specified " + r.kind, gvk: gvk, resp: objT},
		op{method: "put", action: "put", id: "replace" + group + scope + r.kind, doc: "replace the specified " + r.kind, gvk: gvk, params: writeParams, body: objT, resp: objT},
		op{method: "patch", action: "patch", id: "patch" + group + scope + r.kind, doc: "partially update the specified " + r.kind, gvk: gvk, params: patchParams, body: patchT, resp: objT, patch: true},
		op{method: "delete", action: "delete", id: "delete" + group + scope + r.kind, doc: "delete a " + r.kind, gvk: gvk, params: deleteParams, body: deleteT, resp: objT},
	)
	if r.namespaced {
		b.addPath(prefix+"/"+r.plural, nil, tag,
			op{method: "get", action: "list", id: "list" + group + r.kind + "ForAllNamespaces", doc: "list or watch objects of kind " + r.kind, gvk: gvk, params: listParams, resp: listT})
	}
	for _, s := range r.subresources {
		subT := elem(s.obj)
		suffix := string(s.name[0]-'a'+'A') + s.name[1:]
		var ops []op
		for _, verb := range s.verbs {
			switch verb {
			case "get":
				ops = append(ops, op{method: "get", action: "get", id: "read" + group + scope + r.kind + suffix, doc: "read " + s.name + " of the specified " + r.kind, gvk: s.kind, resp: subT})
			case "put":
				ops = append(ops, op{method: "put", action: "put", id: "replace" + group + scope + r.kind + suffix, doc: "replace " + s.name + " of the specified " + r.kind, gvk: s.kind, params: writeParams, body: subT, resp: subT})
			case "patch":
				ops = append(ops, op{method: "patch", action: "patch", id: "patch" + group + scope + r.kind + suffix, doc: "partially update " + s.name + " of the specified " + r.kind, gvk: s.kind, params: patchParams, body: patchT, resp: subT, patch: true})
			case "post":
				ops = append(ops, op{method: "post", action: "post", id: "create" + group + scope + r.kind + suffix, doc: "create " + s.name + " of a " + r.kind, gvk: s.kind, params: writeParams, body: subT, resp: subT})
			}
		}
		b.addPath(coll+"/{name}/"+s.name, itemParams, tag, ops...)
	}
}
