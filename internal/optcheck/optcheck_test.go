package optcheck

import (
	"errors"
	"fmt"
	"testing"
)

func TestFieldsNestAndFlatten(t *testing.T) {
	var inner Errors
	inner.Check("MaxRedirects", errors.New("must be ≥ 0"))
	inner.Check("Timeout", nil)
	var outer Errors
	outer.Check("Concurrency", errors.New("must be > 0"))
	outer.Check("Fetch", fmt.Errorf("fetch options: %w", inner.Err()))
	outer.Check("Log", errors.New("plain"))
	err := fmt.Errorf("worker options: %w", outer.Err())
	var got []string
	for _, f := range Fields(err) {
		got = append(got, f.Field+"="+f.Err.Error())
	}
	want := []string{"Concurrency=must be > 0", "Fetch.MaxRedirects=must be ≥ 0", "Log=plain"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Fields = %q, want %q", got, want)
	}
	if f := Fields(errors.New("no field")); len(f) != 1 || f[0].Field != "" {
		t.Fatalf("an error without a field: %+v", f)
	}
	var none Errors
	if none.Err() != nil {
		t.Fatal("no refusal must be no error")
	}
}
