package modulespec

import (
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Row is what one policy kind's module specs may say: the rules of Validate. Defaults stay
// with each kind, because they mean different things there (a kubelet hook's timeout is a
// cap on the probe's own timeoutSeconds; an admission policy's is a webhook's timeout).
type Row struct {
	// Kind is the config section: scheduler, admission, kubelet.
	Kind string
	// Noun is what the config calls one spec, in errors: "duplicate policy \"p\"".
	Noun string
	// CheckName returns why a name is refused ("" when it is fine); nil: any name.
	CheckName func(name string) string
	// MaxTimeout and MaxPool bound the fields; 0: no bound beyond non-negative.
	MaxTimeout time.Duration
	MaxPool    int
}

// The kinds of policy, one row each. A new kind is a folder under plugins/ (its Extension,
// its spec embedding Spec) and a row here.
var rows = [...]Row{
	// Scheduler plugin names are the framework's (CamelCase, as NodeResourcesFit).
	{Kind: "scheduler", Noun: "wasm plugin"},
	{Kind: "admission", Noun: "policy", CheckName: policyName, MaxTimeout: 30 * time.Second, MaxPool: 256},
	{Kind: "kubelet", Noun: "plugin", CheckName: hookName},
}

// RowOf returns the row of kind; it panics on a kind without one (a programming error).
func RowOf(kind string) Row {
	for _, r := range rows {
		if r.Kind == kind {
			return r
		}
	}
	panic("modulespec: no row for kind " + kind)
}

var policyNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// policyName: an admission policy's name is a metric label and an event's subject.
func policyName(n string) string {
	if len(n) > 63 || !policyNameRE.MatchString(n) {
		return "must be lowercase letters, digits, '-' and '.', at most 63 characters"
	}
	return ""
}

// hookName: pods name a kubelet hook plugin in an annotation value.
func hookName(n string) string {
	if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
		return strings.Join(errs, "; ") + " (it is an annotation value pods name)"
	}
	return ""
}
