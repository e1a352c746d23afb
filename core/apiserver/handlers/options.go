package handlers

import (
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ParseOptions reads what every verb's request may carry: the output format (Accept),
// fieldValidation, dryRun (only All) and a resourceVersion (a non-negative integer).
func ParseOptions(rq *Request) error {
	var err error
	if rq.Format, err = Negotiate(rq.Req.Header.Get("Accept")); err != nil {
		return err
	}
	if rq.FieldValidation, err = ParseFieldValidation(rq.Query.Get("fieldValidation")); err != nil {
		return err
	}
	for _, d := range rq.Query["dryRun"] {
		if d != "All" {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid dryRun %q: only All is supported", d))
		}
		rq.DryRun = true
	}
	if rv := rq.Query.Get("resourceVersion"); rv != "" {
		if _, err := strconv.ParseUint(rv, 10, 64); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q: must be a non-negative integer", rv))
		}
	}
	return nil
}
