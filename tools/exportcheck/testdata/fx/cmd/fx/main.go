// Command fx is a fixture.
package main

import (
	"errors"
	"fmt"

	"example.com/fx/internal/a"
	"example.com/fx/internal/b"
)

func main() {
	t := a.Used()
	var e *a.E
	fmt.Println(t, t.N, t.Method(), errors.As(a.NewE(), &e), errors.Unwrap(a.NewE()), a.Red, b.B)
}
