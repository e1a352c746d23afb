package handlers

import (
	"fmt"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metainternalvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// queryGrammar is the grammar of every query parameter the API server reads, so that
// a malformed value is a 400 naming the parameter whichever handler would read it
// (docs/apiserver.md, "Query parameters"). Parameters not listed are ignored, as upstream.
var queryGrammar = map[string]func(string) error{
	// Booleans: upstream's conversion takes anything that is not "false" or "0" as true,
	// so allowWatchBookmarks=x silently meant true. We accept only what clients send.
	"watch": func(v string) error {
		if v == "1" || v == "0" { // parsePath takes watch=1 too
			return nil
		}
		return parseQueryBool(v)
	},
	"allowWatchBookmarks": parseQueryBool, "sendInitialEvents": parseQueryBool,
	"pretty": parseQueryBool, "orphanDependents": parseQueryBool, "force": parseQueryBool,
	"ignoreStoreReadErrorWithClusterBreakingPotential": parseQueryBool,
	"follow": parseQueryBool, "previous": parseQueryBool, "timestamps": parseQueryBool,
	"insecureSkipTLSVerifyBackend": parseQueryBool,
	"stdin":                        parseQueryBool, "stdout": parseQueryBool, "stderr": parseQueryBool, "tty": parseQueryBool,

	"timeoutSeconds":     intAtLeast(0),
	"limit":              intAtLeast(0),
	"gracePeriodSeconds": intAtLeast(math.MinInt64), // any integer, as upstream
	"tailLines":          intAtLeast(0),
	"sinceSeconds":       intAtLeast(1),
	"limitBytes":         intAtLeast(1),

	"resourceVersion": func(v string) error {
		if _, err := strconv.ParseUint(v, 10, 64); err != nil {
			return fmt.Errorf("must be a non-negative integer")
		}
		return nil
	},
	"timeout": func(v string) error {
		if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			return fmt.Errorf("must be a positive duration such as 30s")
		}
		return nil
	},
	"sinceTime": func(v string) error {
		if _, err := time.Parse(time.RFC3339, v); err != nil {
			return fmt.Errorf("must be an RFC 3339 time such as 2024-01-02T15:04:05Z")
		}
		return nil
	},
	"labelSelector": func(v string) error { _, err := labels.Parse(v); return err },
	"fieldSelector": func(v string) error { _, err := fields.ParseSelector(v); return err },
	"fieldManager": func(v string) error {
		return fieldErrors(metav1validation.ValidateFieldManager(v, field.NewPath("fieldManager")))
	},
	"dryRun": oneOf(metav1.DryRunAll),
	"fieldValidation": func(v string) error {
		return fieldErrors(metav1validation.ValidateFieldValidation(field.NewPath("fieldValidation"), v))
	},
	"propagationPolicy":    oneOf(string(metav1.DeletePropagationOrphan), string(metav1.DeletePropagationBackground), string(metav1.DeletePropagationForeground)),
	"resourceVersionMatch": oneOf(string(metav1.ResourceVersionMatchNotOlderThan), string(metav1.ResourceVersionMatchExact)),
	"includeObject":        oneOf(string(metav1.IncludeNone), string(metav1.IncludeMetadata), string(metav1.IncludeObject)),
}

func parseQueryBool(v string) error {
	// The handlers compare with "true": accepting more here would accept values they
	// then read as false.
	if v == "true" || v == "false" {
		return nil
	}
	return fmt.Errorf("must be true or false")
}

func intAtLeast(lo int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo {
			return fmt.Errorf("must be an integer >= %d", lo)
		}
		return nil
	}
}

func oneOf(allowed ...string) func(string) error {
	return func(v string) error {
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
	}
}

func fieldErrors(errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return errs.ToAggregate()
}

// ValidateQuery checks every known parameter of q against its grammar (400 BadRequest
// naming the first bad one, in name order), then, for list, watch and deletecollection,
// the combinations upstream forbids (resourceVersionMatch without resourceVersion, ...)
// with upstream's own ListOptions validation (422 Invalid, as upstream answers).
func ValidateQuery(verb string, q url.Values) error {
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		check, ok := queryGrammar[name]
		if !ok {
			continue
		}
		for _, v := range q[name] {
			if err := check(v); err != nil {
				return apierrors.NewBadRequest(fmt.Sprintf("invalid %s %q: %v", name, v, err))
			}
		}
	}
	if verb != "list" && verb != "watch" && verb != "deletecollection" {
		return nil
	}
	var opts internalversion.ListOptions
	if err := metainternalscheme.ParameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, &opts); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid list options: %v", err))
	}
	opts.Watch = verb == "watch"
	if errs := metainternalvalidation.ValidateListOptions(&opts, true); len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	return nil
}
