package a

import "testing"

func TestOnly(t *testing.T) {
	if OnlyTests() != 1 || Unused() != 3 || (T{}).Lonely() != 2 {
		t.Fatal("fixture")
	}
}
