package uidgen

import (
	"errors"
	"fmt"
	"strings"
)

// ErrClosed is returned by every take after Close.
var ErrClosed = errors.New("uidgen: client closed")

// RefusedError is a 4xx answer other than 408: the caller's mistake (a bad token, an
// unknown tag, a bad count). It is returned at once and not retried elsewhere.
type RefusedError struct {
	Status  int    // the HTTP status
	Message string // the service's "error"
	Limit   string // the service's "limit", if any
	Server  string // the server's base URL
}

func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("uidgen: %s refused: HTTP %d: %s", e.Server, e.Status, e.Message)
	if e.Limit != "" {
		msg += " (limit: " + e.Limit + ")"
	}
	return msg
}

// Attempt is one server's failure within a call.
type Attempt struct {
	Server  string // the server's base URL
	Problem string // what it answered: refused, no answer in time, HTTP 503 …
}

// UnavailableError is returned when every server failed once in a call.
type UnavailableError struct {
	Attempts []Attempt
}

func (e *UnavailableError) Error() string {
	parts := make([]string, len(e.Attempts))
	for i, a := range e.Attempts {
		parts[i] = a.Server + ": " + a.Problem
	}
	return "uidgen: every server failed: " + strings.Join(parts, "; ")
}

// GivebackError is what Close returns when some unused IDs could not be offered back.
// Those IDs are only a gap in the tag's IDs; none of them is ever handed out.
type GivebackError struct {
	Errors []error
}

func (e *GivebackError) Error() string {
	parts := make([]string, len(e.Errors))
	for i, err := range e.Errors {
		parts[i] = err.Error()
	}
	return fmt.Sprintf("uidgen: %d give-back(s) failed (a gap, not a repeat): %s",
		len(e.Errors), strings.Join(parts, "; "))
}
