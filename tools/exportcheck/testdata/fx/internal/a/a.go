// Package a is a fixture: what it exports is used, or not, from outside.
package a

import "errors"

// Used is called by cmd/fx.
func Used() T { return T{} }

// Unused is called by nothing outside a.
func Unused() int { return helper() }

// OnlyTests is called by a's own tests only.
func OnlyTests() int { return 1 }

// OtherTests is called by b's tests.
func OtherTests() int { return 2 }

func helper() int { return 3 }

// T is returned by Used, so it is used though nobody outside names it.
type T struct{ N int }

// String is called through fmt.Stringer.
func (T) String() string { return "t" }

// Method is called from cmd/fx.
func (T) Method() int { return 1 }

// Lonely is a method nobody calls.
func (T) Lonely() int { return 2 }

// E is an error type; Unwrap is reached through errors.Unwrap.
type E struct{ err error }

func (e *E) Error() string { return "e" }
func (e *E) Unwrap() error { return e.err }

// NewE is used from outside.
func NewE() error { return &E{errors.New("x")} }

// Color is an enumeration: one value used outside keeps all of them.
type Color int

const (
	Red Color = iota
	Green
)

// Limit is an untyped constant nobody outside reads.
const Limit = 10
