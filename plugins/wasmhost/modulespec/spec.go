// Package modulespec is the declaration of a wasm module that every policy kind shares:
// the six fields of a scheduler wasm plugin, an admission policy and a kubelet hook
// plugin (name, path, failurePolicy, timeout, memoryLimit, pool), checked, resolved to
// the module's bytes and keyed in one place. Each kind's declaration embeds Spec inline,
// so config files keep their flat keys; what differs between kinds (defaults, bounds,
// the name rule) is the kind's row in the table of rows.go.
//
// The package depends on no wasm runtime, so the config packages of the scheduler and
// the kubelet can embed Spec without importing the host.
package modulespec

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Failure policies: what a failed call (trap, timeout, memory limit, garbage) means.
const (
	// Fail: the failure is the verdict (a node rejected, a request refused, a probe
	// failed). The default.
	Fail = "Fail"
	// Ignore: the plugin is treated as having allowed it.
	Ignore = "Ignore"
)

// Limits of the host that a memoryLimit must respect (a wasm page is 64Ki, a 32-bit
// memory at most 4Gi).
const (
	MinMemoryLimit = 64 << 10
	MaxMemoryLimit = 4 << 30
)

// Spec declares one module. Kinds embed it with `json:",inline"`.
type Spec struct {
	// Name is the plugin's name: what profiles, pods or logs call it.
	Name string `json:"name"`
	// Path of the .wasm file, relative to the config file's folder.
	Path string `json:"path"`
	// FailurePolicy is Fail (default) or Ignore.
	FailurePolicy string `json:"failurePolicy,omitempty"`
	// Timeout of one call; 0: the kind's default.
	Timeout metav1.Duration `json:"timeout,omitempty"`
	// MemoryLimit of one instance's linear memory; 0: 64Mi.
	MemoryLimit resource.Quantity `json:"memoryLimit,omitempty"`
	// Pool is the number of instances, so of parallel calls; 0: the kind's default.
	Pool int `json:"pool,omitempty"`
}

// FieldError is a bad field of a Spec; Field is the key inside the spec ("failurePolicy"),
// which the kind prefixes with the path of the spec in its config.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Validate checks the spec against its kind's row; seen, when not nil, holds the names of
// the specs before it in the same list (duplicates are refused) and gets this one's.
func (s *Spec) Validate(r Row, seen map[string]bool) *FieldError {
	fail := func(field, msg string, args ...any) *FieldError {
		return &FieldError{Field: field, Msg: fmt.Sprintf(msg, args...)}
	}
	if s.Name == "" {
		return fail("name", "required")
	}
	if r.CheckName != nil {
		if msg := r.CheckName(s.Name); msg != "" {
			return fail("name", "%q: %s", s.Name, msg)
		}
	}
	if seen[s.Name] {
		return fail("name", "duplicate %s %q", r.Noun, s.Name)
	}
	if seen != nil {
		seen[s.Name] = true
	}
	switch {
	case s.Path == "":
		return fail("path", "required (the .wasm file, relative to the config file's folder)")
	case s.FailurePolicy != "" && s.FailurePolicy != Fail && s.FailurePolicy != Ignore:
		return fail("failurePolicy", "%q: must be Fail or Ignore", s.FailurePolicy)
	case s.Timeout.Duration < 0:
		return fail("timeout", "%s: must not be negative", s.Timeout.Duration)
	case r.MaxTimeout > 0 && s.Timeout.Duration > r.MaxTimeout:
		return fail("timeout", "%s: must be between 0 and %s", s.Timeout.Duration, r.MaxTimeout)
	case s.MemoryLimit.Sign() < 0:
		return fail("memoryLimit", "%s: must not be negative", s.MemoryLimit.String())
	case s.MemoryLimit.Sign() > 0 && (s.MemoryLimit.Value() < MinMemoryLimit || s.MemoryLimit.Value() > MaxMemoryLimit):
		return fail("memoryLimit", "%s: must be between 64Ki and 4Gi (or 0: 64Mi)", s.MemoryLimit.String())
	case s.Pool < 0:
		return fail("pool", "%d: must not be negative", s.Pool)
	case r.MaxPool > 0 && s.Pool > r.MaxPool:
		return fail("pool", "%d: must be between 1 and %d", s.Pool, r.MaxPool)
	}
	return nil
}

// Policy is the failure policy in force: Fail when none is given.
func (s *Spec) Policy() string {
	if s.FailurePolicy == "" {
		return Fail
	}
	return s.FailurePolicy
}

// MemoryBytes is the memory limit in bytes; 0: the host's default.
func (s *Spec) MemoryBytes() uint64 { return uint64(max(s.MemoryLimit.Value(), 0)) }

// TimeoutOr is the call time limit: the spec's, or def.
func (s *Spec) TimeoutOr(def time.Duration) time.Duration {
	if s.Timeout.Duration > 0 {
		return s.Timeout.Duration
	}
	return def
}

// PoolOr is the pool size: the spec's, or def.
func (s *Spec) PoolOr(def int) int {
	if s.Pool > 0 {
		return s.Pool
	}
	return def
}

// Module is a spec's module as read from disk: its absolute path and its bytes.
type Module struct {
	Path string
	Wasm []byte
}

// Resolve reads the spec's module file, Path being relative to baseDir. The error is
// os.ReadFile's, which names the file.
func (s *Spec) Resolve(baseDir string) (*Module, error) {
	path := s.AbsPath(baseDir)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return &Module{Path: path, Wasm: b}, nil
}

// AbsPath is the module file's path, Path being relative to baseDir.
func (s *Spec) AbsPath(baseDir string) string {
	if filepath.IsAbs(s.Path) || baseDir == "" {
		return s.Path
	}
	return filepath.Join(baseDir, s.Path)
}

// Key identifies a whole declaration (decl: the kind's spec, which embeds a Spec, with its
// args, rules or selectors) together with the module's bytes: a reload that leaves both
// unchanged keeps the loaded plugin, its instances warm.
func (m *Module) Key(decl any) string {
	h := sha256.New()
	b, _ := json.Marshal(decl)
	h.Write(b)
	h.Write(m.Wasm)
	return fmt.Sprintf("%x", h.Sum(nil))
}

// FieldPath is the config path of a field that encoding/json names in a type error: a
// field of an embedded Spec is named through the embedding ("Spec.pool"), which is not a
// key of the config file.
func FieldPath(jsonField string) string {
	p := strings.ReplaceAll("."+jsonField, ".Spec.", ".")
	return p[1:]
}
