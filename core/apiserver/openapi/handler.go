// Package openapi serves the API's OpenAPI documents: /openapi/v2 (Swagger 2.0, JSON or the
// protobuf form client-go asks for) and /openapi/v3 (an index plus one OpenAPI 3.0 document
// per group version). Schemas are generated once, by reflection over the k8s.io/api Go types
// (json tags, field docs from SwaggerDoc, patch strategy tags), and cached.
//
// kubectl depends on them: its default --validate=strict looks up the PATCH operation of a
// kind in /openapi/v3 and, finding a fieldValidation parameter there, sends
// fieldValidation=Strict and leaves validation to the server; kubectl explain and apply read
// the schemas and their x-kubernetes-patch-* extensions.
package openapi

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Version is the Kubernetes API version the documents describe.
const Version = "v1.32.0"

const (
	v2ProtoMime     = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	v3IndexPath     = "/openapi/v3"
	v3DocPathPrefix = "/openapi/v3/"
	v2Path          = "/openapi/v2"
)

// documents holds every document, rendered once.
type documents struct {
	v2JSON, v2Proto []byte
	v2ETag          string
	v3Index         []byte
	v3              map[string]v3Doc // key: api/v1, apis/apps/v1, ...
}

type v3Doc struct {
	body []byte
	hash string
}

var (
	once    sync.Once
	docs    *documents
	docsErr error
)

func load() (*documents, error) {
	once.Do(func() { docs, docsErr = build() })
	return docs, docsErr
}

func hashOf(b []byte) string {
	return fmt.Sprintf("%X", sha512.Sum512(b))
}

func info() object {
	return object{"title": "Kubernetes", "version": Version}
}

// V3Document builds the OpenAPI 3.0 document of one group version.
func v3Document(gv schema.GroupVersion) object {
	g := newGenerator(v3, kindTypes())
	b := &docBuilder{g: g, paths: object{}}
	for _, r := range resources {
		if r.gv == gv {
			b.addResource(r)
		}
	}
	// Kinds of this group version that no path of it references (Scale for autoscaling/v1)
	// still get their schemas, so kubectl explain finds them.
	for t, gvks := range g.gvks {
		for _, gvk := range gvks {
			if gvk.GroupVersion() == gv && gvk.Kind != "Status" && gvk.Kind != "DeleteOptions" && gvk.Kind != "WatchEvent" {
				g.typeSchema(t)
			}
		}
	}
	return object{
		"openapi": "3.0.0",
		"info":    info(),
		"paths":   b.paths,
		"components": object{
			"schemas":         g.defs,
			"securitySchemes": object{"BearerToken": object{"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}},
		},
		"security": []any{object{"BearerToken": []any{}}},
	}
}

func v2Document() object {
	g := newGenerator(v2, kindTypes())
	b := &docBuilder{g: g, paths: object{}}
	for _, r := range resources {
		b.addResource(r)
	}
	return object{
		"swagger":             "2.0",
		"info":                info(),
		"paths":               b.paths,
		"definitions":         g.defs,
		"securityDefinitions": object{"BearerToken": object{"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}},
		"security":            []any{object{"BearerToken": []any{}}},
	}
}

func build() (*documents, error) {
	d := &documents{v3: map[string]v3Doc{}}
	index := object{}
	for _, gv := range groupVersions {
		body, err := json.Marshal(v3Document(gv))
		if err != nil {
			return nil, fmt.Errorf("openapi: render v3 document of %s: %w", gv, err)
		}
		key := gvPath(gv)
		doc := v3Doc{body: body, hash: hashOf(body)}
		d.v3[key] = doc
		index[key] = object{"serverRelativeURL": v3DocPathPrefix + key + "?hash=" + doc.hash}
	}
	var err error
	if d.v3Index, err = json.Marshal(object{"paths": index}); err != nil {
		return nil, fmt.Errorf("openapi: render v3 index: %w", err)
	}
	if d.v2JSON, err = json.Marshal(v2Document()); err != nil {
		return nil, fmt.Errorf("openapi: render v2 document: %w", err)
	}
	parsed, err := openapi_v2.ParseDocument(d.v2JSON)
	if err != nil {
		return nil, fmt.Errorf("openapi: parse generated v2 document: %w", err)
	}
	if d.v2Proto, err = proto.Marshal(parsed); err != nil {
		return nil, fmt.Errorf("openapi: encode v2 document as protobuf: %w", err)
	}
	d.v2ETag = `"` + hashOf(d.v2JSON) + `"`
	return d, nil
}

// Handler serves /openapi/v2, /openapi/v3 and /openapi/v3/<group-version>. Mount it for the
// /openapi/ prefix. The documents are generated on the first request and then served from
// memory.
func Handler() http.Handler {
	return http.HandlerFunc(serve)
}

func serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	d, err := load()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == v2Path:
		if r.Header.Get("If-None-Match") == d.v2ETag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", d.v2ETag)
		if wantsProtobuf(r.Header.Get("Accept")) {
			write(w, v2ProtoMime, d.v2Proto)
			return
		}
		write(w, "application/json", d.v2JSON)
	case path == v3IndexPath:
		w.Header().Set("Cache-Control", "no-cache, private")
		write(w, "application/json", d.v3Index)
	case strings.HasPrefix(path, v3DocPathPrefix):
		key := strings.TrimPrefix(path, v3DocPathPrefix)
		doc, ok := d.v3[key]
		if !ok {
			http.NotFound(w, r)
			return
		}
		etag := `"` + doc.hash + `"`
		w.Header().Set("ETag", etag)
		if h := r.URL.Query().Get("hash"); h != "" {
			if h != doc.hash {
				// A stale link: send the client to the current document, as upstream does.
				w.Header().Set("Location", v3DocPathPrefix+key+"?hash="+doc.hash)
				w.WriteHeader(http.StatusMovedPermanently)
				return
			}
			w.Header().Set("Cache-Control", "public, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache, private")
		}
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		write(w, "application/json", doc.body)
	default:
		http.NotFound(w, r)
	}
}

func wantsProtobuf(accept string) bool {
	return strings.Contains(accept, "application/com.github.proto-openapi.spec.v2")
}

func write(w http.ResponseWriter, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
