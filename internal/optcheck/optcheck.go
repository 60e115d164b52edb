// Package optcheck is how an Options' Validate names the field it
// refuses: each refusal is a FieldError, so that whoever set the field
// under another name (the config's keys) can say which one is wrong.
package optcheck

import "errors"

// FieldError is a value an Options refuses. Field is the Go field's name,
// dotted for a field of nested options ("Fetch.MaxRedirects").
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

// Errors collects the refusals of one Validate.
type Errors struct {
	errs []error
}

// Check records err (if not nil) against field. When err holds field
// errors of nested options, each is recorded under field as a prefix
// (none if field is "": options whose fields are the caller's own).
func (l *Errors) Check(field string, err error) {
	if err == nil {
		return
	}
	for _, f := range Fields(err) {
		name := field
		if name != "" && f.Field != "" {
			name += "."
		}
		name += f.Field
		l.errs = append(l.errs, &FieldError{Field: name, Err: f.Err})
	}
}

// Err is the refusals joined, or nil if there are none.
func (l *Errors) Err() error { return errors.Join(l.errs...) }

// Fields flattens err into its field errors, looking through wrapping and
// joining. A part of err that names no field comes back with Field "".
func Fields(err error) []*FieldError {
	if err == nil {
		return nil
	}
	if f, ok := err.(*FieldError); ok {
		return []*FieldError{f}
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		var out []*FieldError
		for _, e := range u.Unwrap() {
			out = append(out, Fields(e)...)
		}
		return out
	case interface{ Unwrap() error }:
		// The wrapping's own words are dropped only when what it wraps
		// names fields, which say more.
		inner := Fields(u.Unwrap())
		for _, f := range inner {
			if f.Field != "" {
				return inner
			}
		}
	}
	return []*FieldError{{Err: err}}
}
