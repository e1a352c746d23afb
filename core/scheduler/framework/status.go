package framework

import (
	"errors"
	"strings"
)

// Code is the outcome of a plugin call.
type Code int

const (
	// Success: the plugin allows the pod (a nil *Status means Success too).
	Success Code = iota
	// Error: an internal error; the cycle fails and the pod is retried with back-off.
	Error
	// Unschedulable: the node is rejected, but preemption may help.
	Unschedulable
	// UnschedulableAndUnresolvable: the node is rejected and preemption cannot help.
	UnschedulableAndUnresolvable
	// Wait: a Permit plugin holds the pod.
	Wait
	// Skip: the plugin has nothing to do for this pod (PreFilter, PreScore, Bind).
	Skip
)

var codeNames = []string{"Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Wait", "Skip"}

func (c Code) String() string {
	if int(c) < len(codeNames) && c >= 0 {
		return codeNames[c]
	}
	return "Unknown"
}

// Status is a plugin's verdict: a code, human-readable reasons, the plugin that gave it,
// and for Error the underlying error. Reasons are what "0/5 nodes are available: ..."
// messages are assembled from.
type Status struct {
	code    Code
	reasons []string
	err     error
	plugin  string
}

// NewStatus makes a Status with a code and reasons.
func NewStatus(code Code, reasons ...string) *Status {
	s := &Status{code: code, reasons: reasons}
	if code == Error {
		s.err = errors.New(strings.Join(reasons, ", "))
	}
	return s
}

// AsStatus wraps an error as an Error Status (nil error gives nil Status).
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: Error, reasons: []string{err.Error()}, err: err}
}

// Code returns the status code; a nil Status is Success.
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// Reasons returns the reasons of the verdict.
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	if s.err != nil && len(s.reasons) == 0 {
		return []string{s.err.Error()}
	}
	return s.reasons
}

// Message joins the reasons with ", ".
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.Reasons(), ", ")
}

// AsError returns the status as an error (nil for Success and Skip).
func (s *Status) AsError() error {
	if s.IsSuccess() || s.IsSkip() {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	return errors.New(s.Message())
}

// Plugin is the name of the plugin that produced the status (set by the runtime).
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// WithPlugin records the plugin that produced the status and returns s.
func (s *Status) WithPlugin(name string) *Status {
	if s != nil {
		s.plugin = name
	}
	return s
}

// WithError attaches an underlying error and returns s.
func (s *Status) WithError(err error) *Status {
	if s != nil {
		s.err = err
	}
	return s
}

// IsSuccess is true for nil and Success.
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// IsSkip is true for Skip.
func (s *Status) IsSkip() bool { return s.Code() == Skip }

// IsWait is true for Wait.
func (s *Status) IsWait() bool { return s.Code() == Wait }

// IsRejected is true for Unschedulable and UnschedulableAndUnresolvable.
func (s *Status) IsRejected() bool {
	c := s.Code()
	return c == Unschedulable || c == UnschedulableAndUnresolvable
}
