package b

import (
	"testing"

	"example.com/fx/internal/a"
)

func TestOther(t *testing.T) {
	if a.OtherTests() != 2 {
		t.Fatal("fixture")
	}
}
